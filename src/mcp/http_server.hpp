// The HTTP/1.1 side of `chock mcp --http` (http_transport.hpp): a listener
// on a loopback address only, one thread a connection, each request read
// whole by llhttp (its head and body bounded) and handed to the transport,
// which answers with a whole body or a stream of Server-Sent Events
// (chunked, so the connection is kept for the next request). No TLS: the
// listener is never on an address another machine can reach.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::mcp::http {

inline constexpr std::size_t kMaxHead = 64U << 10;
inline constexpr std::size_t kMaxBody = 8U << 20;  // an MCP line's bound (jsonrpc.hpp)
inline constexpr int kMaxConnections = 64;

using Headers = std::vector<std::pair<std::string, std::string>>;

// ASCII letters in lower case: header names, and the values compared without case.
[[nodiscard]] std::string lower(std::string s);

struct Request {
  std::string method;
  std::string target;  // the path and query, as sent
  Headers headers;     // names in lower case, in order
  std::string body;
  // The first header of this (lower-case) name.
  [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

// One connection's answers. A handler sends one whole answer, or starts an
// event stream, sends its events and ends it. After a failed write the
// client is gone: every later write fails at once.
class Reply {
 public:
  explicit Reply(int fd) : fd_(fd) {}
  bool send(int status, const Headers& headers, std::string_view body);
  bool start_events(const Headers& headers);
  bool event(std::string_view data);  // one `data:` line: the data holds no newline
  bool event_comment();               // a line the client ignores: is it still there?
  bool end_events();
  [[nodiscard]] bool alive() const { return alive_; }
  [[nodiscard]] bool answered() const { return answered_; }

 private:
  bool write(std::string_view bytes);
  int fd_;
  bool alive_ = true;
  bool answered_ = false;
};

using Handler = std::function<void(const Request&, Reply&)>;

class Listener {
 public:
  // Binds `address` (127.0.0.1, ::1 or localhost only) at `port` (0: one
  // the kernel picks).
  [[nodiscard]] static Expected<Listener> open(const std::string& address, int port);
  [[nodiscard]] int port() const { return port_; }
  [[nodiscard]] const std::string& address() const { return address_; }
  // Accepts until `stop_fd` is readable; each connection on a thread of its
  // own (at most kMaxConnections; past that one is answered 503). Then
  // `stopping` ends what the handlers wait for, and it returns once every
  // connection's thread has ended.
  void serve(const Handler& handler, int stop_fd, const std::function<void()>& stopping);

 private:
  UniqueFd fd_;
  int port_ = 0;
  std::string address_;
};

}  // namespace chock::mcp::http
