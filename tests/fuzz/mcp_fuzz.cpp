// libFuzzer: arbitrary bytes as what an MCP client (or a wrapped server)
// writes to Chock's stdio. A crash or sanitizer report is a bug; so is a
// line that gets neither a message nor an answer when it holds anything but
// blanks or an unanswerable notification, an answer that is not a one-line
// JSON-RPC error, or a message whose serialized form does not parse back.
// The same bytes are also met nested in a request's params up to ~200,000
// levels deep (far past kMaxJsonDepth) or around the limit: a line deeper than the limit must
// be answered with an error and never become a message. A batch's values
// are each held to the same; a tools/call's arguments are checked against
// every published inputSchema (mcp/schema.hpp), whose refusal is one line.
#include <fcntl.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "mcp/jsonrpc.hpp"
#include "mcp/schema.hpp"
#include "mcp/server.hpp"
#include "util/json.hpp"

namespace {

void check_arguments(const chock::mcp::Json& params) {
  using namespace chock::mcp;
  static const Json tools = tool_definitions();
  if (!params.is_object() || !params.contains("arguments")) return;
  for (const auto& t : tools)
    if (auto refused = schema::check(t["inputSchema"], params["arguments"]))
      if (refused->find('\n') != std::string::npos || refused->size() > 4096) std::abort();
}

void check_parsed(const chock::mcp::Parsed& p, bool in_batch) {
  using namespace chock::mcp;
  if (p.batch) {
    if (in_batch || p.message || p.reply || p.items.empty()) std::abort();
    for (const auto& item : p.items) check_parsed(item, true);
    return;
  }
  if (p.message && p.reply) std::abort();
  if (p.reply) {
    const std::string out = serialize(*p.reply);
    if (out.find('\n') != out.size() - 1) std::abort();
    Parsed back = parse_line(out);
    if (!back.message || back.message->kind != Message::Kind::response || !back.message->is_error())
      std::abort();
  }
  if (p.message) {
    Json again = p.message->kind == Message::Kind::response
                     ? (p.message->is_error()
                            ? Json{{"jsonrpc", "2.0"}, {"id", p.message->id}, {"error", p.message->error}}
                            : response(p.message->id, p.message->result))
                 : p.message->kind == Message::Kind::request
                     ? request(p.message->id, p.message->method, p.message->params)
                     : notification(p.message->method, p.message->params);
    Parsed back = parse_line(serialize(again));
    if (!back.message || back.message->kind != p.message->kind || back.message->method != p.message->method)
      std::abort();
    (void)negotiate_version(p.message->params.is_object() ? p.message->params.value("protocolVersion", Json())
                                                          : Json());
    if (p.message->method == "tools/call") check_arguments(p.message->params);
  }
}

void check_line(std::string_view line) {
  check_parsed(chock::mcp::parse_line(line), false);
}

// The third byte chooses an opener (bit 0: an object, else an array) and a
// scale (bit 1: the first two bytes times 3, up to 196,605 levels; else the
// first byte mod 128, around the limit); the rest lies at the bottom.
void check_nested(std::string_view bytes) {
  if (bytes.size() < 3) return;
  const auto byte = [&](std::size_t i) {
    return static_cast<std::size_t>(static_cast<unsigned char>(bytes[i]));
  };
  const std::size_t depth = (byte(2) & 2) != 0 ? (byte(0) | byte(1) << 8) * 3 : byte(0) % 128;
  const bool object = (byte(2) & 1) != 0;
  const std::string_view bottom = bytes.substr(3);
  std::string line = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":)";
  line.reserve(line.size() + depth * 6 + bottom.size() + 1);
  for (std::size_t i = 0; i < depth; ++i) line += object ? R"({"a":)" : "[";
  line += bottom.empty() ? std::string_view("0") : bottom;
  for (std::size_t i = 0; i < depth; ++i) line += object ? '}' : ']';
  line += '}';
  check_line(line);
  // The line and the params each count a level.
  if (depth + 1 > chock::kMaxJsonDepth) {
    chock::mcp::Parsed p = chock::mcp::parse_line(line);
    if (p.message || !p.reply) std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  check_line(bytes);
  check_nested(bytes);
  // The same bytes as a stream, split into lines by the reader (a small limit, so long lines are met).
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return 0;
  if (size <= 65536) {
    (void)!::write(fds[1], data, size);
    ::close(fds[1]);
    chock::mcp::LineReader reader(fds[0], 256);
    while (auto line = reader.next()) {
      if (line->text.size() > 256) std::abort();
      if (!line->too_long) check_line(line->text);
    }
  } else {
    ::close(fds[1]);
  }
  ::close(fds[0]);
  return 0;
}
