#include "mcp/jsonrpc.hpp"

#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <utility>

#include "util/json.hpp"

namespace chock::mcp {

namespace {

bool valid_id(const Json& id) {
  return id.is_string() || id.is_number_integer();
}

Parsed fail(const Json& id, int error_code, const std::string& why) {
  Parsed p;
  p.reply = error_response(id, error_code, why);
  return p;
}

Parsed of(Message m) {
  Parsed p;
  p.message = std::move(m);
  return p;
}

}  // namespace

Parsed parse_line(std::string_view line) {
  if (line.find_first_not_of(" \t\r\n") == std::string_view::npos) return {};
  auto parsed = parse_json(line);
  if (!parsed) return fail(nullptr, code::parse_error, "the line is " + parsed.error().what);
  Json j = std::move(*parsed);
  if (j.is_array()) {
    // JSON-RPC: an empty batch is one invalid request, answered alone.
    if (j.empty())
      return fail(nullptr, code::invalid_request, "an empty batch (JSON array) holds no message");
    Parsed p;
    p.batch = true;
    for (const auto& value : j) p.items.push_back(parse_value(value));
    return p;
  }
  return parse_value(j);
}

Parsed parse_value(const Json& j) {
  if (!j.is_object()) return fail(nullptr, code::invalid_request, "a message is a JSON object");
  const auto id_at = j.find("id");
  const bool has_id = id_at != j.end() && !id_at->is_null();
  const Json id = has_id && valid_id(*id_at) ? *id_at : Json(nullptr);
  if (has_id && !valid_id(*id_at))
    return fail(nullptr, code::invalid_request, "an id is a string or an integer");
  // MCP, unlike JSON-RPC, never lets a request's id be null; such a line is
  // neither a request nor a notification, and is told so.
  if (id_at != j.end() && id_at->is_null() && j.contains("method"))
    return fail(nullptr, code::invalid_request, "a request's id is a string or an integer, never null");
  if (j.value("jsonrpc", Json()) != "2.0")
    return fail(id, code::invalid_request, "\"jsonrpc\" must be \"2.0\"");
  Message m;
  m.id = id;
  const auto method = j.find("method");
  if (method != j.end()) {
    if (!method->is_string()) return fail(id, code::invalid_request, "\"method\" is a string");
    m.method = method->get<std::string>();
    m.kind = has_id ? Message::Kind::request : Message::Kind::notification;
    if (const auto params = j.find("params"); params != j.end()) {
      if (!params->is_object() && !params->is_array()) {
        if (!has_id) return {};  // nobody to tell
        return fail(id, code::invalid_params, "\"params\" is an object or an array");
      }
      m.params = *params;
    }
    return of(std::move(m));
  }
  const bool has_result = j.contains("result"), has_error = j.contains("error");
  // An error answers with a null id when the request's could not be read.
  const bool null_id_error = has_error && id_at != j.end() && id_at->is_null();
  if ((!has_id && !null_id_error) || has_result == has_error)
    return fail(nullptr, code::invalid_request, "neither a request, a notification nor a response");
  m.kind = Message::Kind::response;
  if (has_result) m.result = j["result"];
  if (has_error) {
    if (!j["error"].is_object()) return fail(nullptr, code::invalid_request, "\"error\" is an object");
    m.error = j["error"];
  }
  return of(std::move(m));
}

Json response(const Json& id, Json result) {
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(result)}};
}

Json error_response(const Json& id, int error_code, const std::string& message, const Json& data) {
  Json error{{"code", error_code}, {"message", message}};
  if (!data.is_null()) error["data"] = data;
  return Json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}};
}

Json request(const Json& id, const std::string& method, Json params) {
  Json j{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j;
}

Json notification(const std::string& method, Json params) {
  Json j{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) j["params"] = std::move(params);
  return j;
}

std::string serialize(const Json& message) {
  // dump escapes control characters, so a message is always one line.
  return message.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string negotiate_version(const Json& requested) {
  if (requested.is_string())
    for (const char* v : kProtocolVersions)
      if (requested.get<std::string>() == v) return v;
  return kProtocolVersions[0];
}

int log_severity(const Json& level) {
  if (level.is_string())
    for (std::size_t i = 0; i < std::size(kLogLevels); ++i)
      if (level.get<std::string>() == kLogLevels[i]) return static_cast<int>(i);
  return -1;
}

bool LineReader::fill() {
  if (ended_) return false;
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) {
      ended_ = true;
      return false;
    }
    buffer_.append(buf, static_cast<std::size_t>(n));
    return true;
  }
}

std::optional<LineReader::Line> LineReader::pop() {
  for (;;) {
    // Only the bytes not yet looked at: a long line arrives in many reads.
    const std::size_t nl = buffer_.find('\n', scanned_);
    scanned_ = nl == std::string::npos ? buffer_.size() : 0;
    if (skipping_) {
      if (nl == std::string::npos) {
        buffer_.clear();
        scanned_ = 0;
        return std::nullopt;
      }
      buffer_.erase(0, nl + 1);
      skipping_ = false;
      return Line{"", true};
    }
    if (nl == std::string::npos) {
      if (buffer_.size() > max_) {
        buffer_.clear();
        scanned_ = 0;
        skipping_ = true;
        continue;
      }
      if (ended_ && !buffer_.empty()) {
        Line last{std::move(buffer_), false};
        buffer_.clear();
        scanned_ = 0;
        return last;
      }
      return std::nullopt;
    }
    if (nl > max_) {
      buffer_.erase(0, nl + 1);
      return Line{"", true};
    }
    Line line{buffer_.substr(0, nl), false};
    buffer_.erase(0, nl + 1);
    return line;
  }
}

std::optional<LineReader::Line> LineReader::next() {
  for (;;) {
    if (auto line = pop()) return line;
    if (ended_) {
      if (skipping_) {
        skipping_ = false;
        return Line{"", true};
      }
      return std::nullopt;
    }
    fill();
  }
}

}  // namespace chock::mcp
