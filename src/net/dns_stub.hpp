// The filtered call's own resolver, as messages: what the stub answers to a
// DNS query from inside a call (issue 21's first layer). A name the policy
// allows gets a synthetic address, one per name and family for the life of
// the call, so that the relay maps an address back to its name exactly; a
// refused name gets REFUSED (never NXDOMAIN) and is never looked up on the
// host. Only A and AAAA of class IN are answered; anything else is REFUSED.
//
// The bytes come from a program Chock does not trust: every length is
// checked, a question may not use compression, and a message that is not a
// query gets no answer at all (a reply to a reply would let two stubs loop).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "chock/net.hpp"

namespace chock::net {

// The synthetic blocks: 198.18.0.0/15 (RFC 2544's benchmarking range, never
// routed on the internet) and Chock's own ULA /64, fd5e:2a41:9c07:53::/64.
inline constexpr const char* kSyntheticV4 = "198.18.0.0/15";
inline constexpr const char* kSyntheticV6 = "fd5e:2a41:9c07:53::/64";

class SyntheticMap {
 public:
  // Names one call's resolver answers (A and AAAA of a name count once): a
  // real program asks for hundreds; a call asking for hundreds of thousands
  // would grow Chock's own memory (issue 53: 261,120 names, 152 MB).
  static constexpr std::size_t kMaxNames = 1024;
  static_assert(kMaxNames < (std::size_t{1} << 17) * 254 / 256, "each name has an address of 198.18.0.0/15");

  // The address of `name` (lower case, as Host::text) in `family`, made on
  // first use and the same after; nullopt for a new name past kMaxNames
  // (counted in refused()).
  std::optional<sockaddr_storage> address_for(const std::string& name, int family);
  // The name behind a synthetic address; nullopt for any other address.
  [[nodiscard]] std::optional<std::string> name_for(const sockaddr_storage& address) const;
  [[nodiscard]] std::size_t size() const { return names_.size(); }
  // Distinct names answered, and questions for new names refused past the cap.
  [[nodiscard]] std::size_t names() const { return distinct_; }
  [[nodiscard]] std::uint64_t refused() const { return refused_; }

 private:
  std::map<std::string, std::uint32_t> v4_;  // name -> offset in 198.18.0.0/15
  std::map<std::string, std::uint64_t> v6_;  // name -> interface id in the /64
  std::map<std::pair<int, std::uint64_t>, std::string> names_;
  std::uint32_t next_v4_ = 1;
  std::uint64_t next_v6_ = 1;
  std::size_t distinct_ = 0;
  std::uint64_t refused_ = 0;
};

// What the stub is told of a name: whether the call may reach it, and which
// families it has (an allowed name without one answers NOERROR and nothing).
struct StubName {
  bool allowed = false;
  bool ipv4 = true;
  bool ipv6 = true;
};
using StubPolicy = std::function<StubName(const Host& host)>;

// A parsed query: the one question, its type and class, and the bytes of the
// question section as sent (echoed, so a client's 0x20 case mixing matches).
struct DnsQuery {
  std::uint16_t id = 0;
  bool recursion_desired = false;
  std::uint8_t opcode = 0;
  std::string name;  // as sent, without the trailing dot
  std::uint16_t type = 0;
  std::uint16_t klass = 0;
  std::vector<std::uint8_t> question;
};

enum class DnsParse { ok, ignore, format_error, not_implemented };
// ignore: too short for a header, or a response; format_error: a header and
// no readable question; not_implemented: an opcode other than QUERY.
DnsParse parse_query(std::span<const std::uint8_t> message, DnsQuery& out);

// The stub's answer to `message`, or nullopt when it gets none. Every name
// the stub answers with an address is in `map` after; a new name past the
// map's cap is answered REFUSED.
std::optional<std::vector<std::uint8_t>> stub_answer(std::span<const std::uint8_t> message, SyntheticMap& map,
                                                     const StubPolicy& policy);

}  // namespace chock::net
