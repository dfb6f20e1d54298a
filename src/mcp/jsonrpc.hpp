// JSON-RPC 2.0 as MCP's stdio transport carries it: one JSON value a line,
// a message or (protocol version 2025-03-26 only) a batch of them. Both of Chock's MCP faces (the server and
// the relay around a third-party server) read and write messages through this layer only.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chock::mcp {

using Json = nlohmann::json;

// The longest line read; past it the line is dropped up to its newline and
// answered with an error. A file tool's content is capped well below.
inline constexpr std::size_t kMaxLineBytes = 8U << 20;

namespace code {
inline constexpr int parse_error = -32700;
inline constexpr int invalid_request = -32600;
inline constexpr int method_not_found = -32601;
inline constexpr int invalid_params = -32602;
inline constexpr int internal_error = -32603;
// Implementation-defined (JSON-RPC reserves -32000 to -32099 for servers):
// Chock could not start serving (an unknown session, a project that is not
// there, a chock.zon it cannot read), and says why in the message.
inline constexpr int not_serving = -32002;
}  // namespace code

// NOLINTNEXTLINE(bugprone-exception-escape): a copy allocates, as every string's does
struct Message {
  enum class Kind { request, notification, response };
  Kind kind = Kind::notification;
  Json id;  // request and response; a string or an integer
  std::string method;
  Json params;  // an object or an array, or null when absent
  Json result;  // response: one of result and error
  Json error;
  [[nodiscard]] bool is_error() const { return !error.is_null(); }
};

// One line read. Either a message, or the error response to send back for
// it (its id when the line was a request with a readable id, else null).
// `reply` is empty when nothing should be answered (a bad notification).
// A JSON array of at least one value is a batch: `batch` is set and `items`
// holds each of its values read as a line of its own would be (a batch in
// a batch is not a message). Whether a batch is taken is the reader's call.
struct Parsed {
  std::optional<Message> message;
  std::optional<Json> reply;
  bool batch = false;
  std::vector<Parsed> items;
};
[[nodiscard]] Parsed parse_line(std::string_view line);
// One value of a line (or of a batch) as a message.
[[nodiscard]] Parsed parse_value(const Json& value);

[[nodiscard]] Json response(const Json& id, Json result);
[[nodiscard]] Json error_response(const Json& id, int error_code, const std::string& message,
                                  const Json& data = nullptr);
[[nodiscard]] Json request(const Json& id, const std::string& method, Json params);
[[nodiscard]] Json notification(const std::string& method, Json params);
// One line, '\n' included; bytes that are not UTF-8 become U+FFFD.
[[nodiscard]] std::string serialize(const Json& message);

// The versions spoken, newest first. The answer to a client's version: the
// same when it is one of them, else the newest (the client then decides).
inline constexpr const char* kProtocolVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26"};
[[nodiscard]] std::string negotiate_version(const Json& requested);
// The one version that takes batches (JSON-RPC arrays): 2025-06-18 removed them.
inline constexpr const char* kBatchVersion = "2025-03-26";

// MCP logging's levels (RFC 5424's), least severe first: a level's rank, or -1.
inline constexpr const char* kLogLevels[] = {"debug", "info",     "notice", "warning",
                                             "error", "critical", "alert",  "emergency"};
[[nodiscard]] int log_severity(const Json& level);

// Splits a descriptor's bytes into lines, each at most kMaxLineBytes (a
// longer one is returned as `too_long`, its bytes dropped).
class LineReader {
 public:
  explicit LineReader(int fd, std::size_t max_line = kMaxLineBytes) : fd_(fd), max_(max_line) {}
  struct Line {
    std::string text;
    bool too_long = false;
  };
  // The next line; nullopt at end of input (a last line without '\n' counts).
  // A read error other than EINTR ends the input too.
  std::optional<Line> next();
  // For poll loops: reads what is there once, then `pop` hands out whole lines.
  // False at end of input.
  bool fill();
  std::optional<Line> pop();
  [[nodiscard]] bool ended() const { return ended_; }

 private:
  int fd_;
  std::size_t max_;
  std::string buffer_;
  std::size_t scanned_ = 0;  // buffer_ holds no '\n' before this
  bool skipping_ = false;    // inside a line that was too long
  bool ended_ = false;
};

}  // namespace chock::mcp
