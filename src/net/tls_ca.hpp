// The certificate authority of one filtered call, for the relay that
// terminates TLS to a host with a credential: made in memory when the call
// starts (an EC P-256 key that never leaves the host side's process, nor
// touches a disk), name-constrained to exactly the hosts with a credential,
// valid for a day. The call trusts its certificate (ca_pem) through the
// CA bundle of its /etc and the variables programs read for extra CAs; a
// leaf for a host is issued the first time the relay meets it, and cached.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "chock/error.hpp"

using SSL_CTX = struct ssl_ctx_st;

namespace chock::net {

class CallCa {
 public:
  // Names (DNS) or addresses (IPv4, IPv6) the CA may vouch for; any other is refused.
  [[nodiscard]] static Expected<std::unique_ptr<CallCa>> make(const std::vector<std::string>& hosts);
  ~CallCa();
  CallCa(const CallCa&) = delete;
  CallCa& operator=(const CallCa&) = delete;
  // The CA's certificate, PEM: what a call is given to trust.
  [[nodiscard]] const std::string& ca_pem() const { return ca_pem_; }
  // A server context for `host` (its leaf, HTTP/1.1 the only ALPN it
  // offers), shared by every link to it; an Error for a host not in make's list.
  [[nodiscard]] Expected<SSL_CTX*> server_context(const std::string& host);

 private:
  struct Keys;
  CallCa();
  std::unique_ptr<Keys> keys_;
  std::vector<std::string> hosts_;
  std::string ca_pem_;
  std::mutex mutex_;
  std::map<std::string, SSL_CTX*> contexts_;
};

// The OpenSSL error queue's last reason, for an Error's text ("" if none).
[[nodiscard]] std::string openssl_reason();

}  // namespace chock::net
