// The requests of one HTTP/1.1 connection as the terminating relay passes
// them on to a host that has a credential: each request's head (its request
// line and headers) with every sentinel of the call replaced by its secret,
// and everything else exactly as it came: bodies, their chunked framing,
// requests pipelined after it, and the bytes of a connection upgraded to
// another protocol (a WebSocket). llhttp (Node's parser, built from Debian's
// node-llhttp) finds where each head and each message ends; nothing else is
// read. A stream that is not HTTP/1.x ends the link.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"

namespace chock::net {

struct RequestParser;  // llhttp's state (http_rewrite.cpp)

struct Swap {
  std::string sentinel;
  std::string secret;
};

class RequestRewriter {
 public:
  static constexpr std::size_t kMaxHead = 64 << 10;
  explicit RequestRewriter(std::vector<Swap> swaps);
  ~RequestRewriter();
  RequestRewriter(const RequestRewriter&) = delete;
  RequestRewriter& operator=(const RequestRewriter&) = delete;
  // The bytes to send on for `in` (a head is held until it is whole); an
  // Error when the stream is not HTTP/1.x or a head passes kMaxHead.
  [[nodiscard]] Expected<std::string> feed(std::string_view in);
  // How many sentinels were put back, over every request so far.
  [[nodiscard]] std::size_t swapped() const { return swapped_; }
  // Upgraded: what follows is another protocol's, passed as it comes.
  [[nodiscard]] bool upgraded() const { return upgraded_; }

 private:
  void end_head(std::string& out);
  std::vector<Swap> swaps_;
  std::unique_ptr<RequestParser> parser_;
  std::string head_;
  bool in_head_ = true;
  bool upgraded_ = false;
  std::size_t swapped_ = 0;
};

}  // namespace chock::net
