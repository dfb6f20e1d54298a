// The action names the sandbox asks the policy table about, built from the
// values they are about (a host, a device, a server) without letting any of
// those values add a label or a pattern of its own.
#include <array>
#include <cstdio>
#include <vector>

#include "policy/policy.hpp"

namespace chock::policy {

namespace {

// The bytes a label keeps as they are; '_' is not one of them, it starts an escape.
bool kept_as_is(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper-case hex is not what escape_label writes
}

char ascii_lower(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// "github.com" -> "com.github": labels reversed, lowercased, each escaped.
std::string reversed_host(std::string_view host) {
  if (host.ends_with('.')) host.remove_suffix(1);  // the root of a fully qualified name
  std::vector<std::string> labels;
  std::size_t start = 0;
  for (;;) {
    std::size_t end = host.find('.', start);
    std::string label(
        host.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    for (char& c : label) c = ascii_lower(c);
    labels.push_back(escape_label(label));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  std::string out;
  for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
    if (!out.empty()) out += '.';
    out += *it;
  }
  return out;
}

}  // namespace

std::string escape_label(std::string_view value) {
  if (value.empty()) return "_";
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (kept_as_is(c)) {
      out += c;
      continue;
    }
    auto byte = static_cast<unsigned char>(c);
    out += '_';
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

std::optional<std::string> unescape_label(std::string_view label) {
  if (label == "_") return std::string();
  if (label.empty()) return std::nullopt;
  std::string out;
  for (std::size_t i = 0; i < label.size(); ++i) {
    char c = label[i];
    if (kept_as_is(c)) {
      out += c;
      continue;
    }
    if (c != '_' || label.size() - i < 3) return std::nullopt;  // '_' and two hex digits
    int high = hex_value(label[i + 1]);
    int low = hex_value(label[i + 2]);
    if (high < 0 || low < 0) return std::nullopt;
    char decoded = static_cast<char>(high * 16 + low);
    if (kept_as_is(decoded)) return std::nullopt;  // escape_label would have left it as it is
    out += decoded;
    i += 2;
  }
  return out;
}

std::string net_connect(std::string_view host, unsigned port) {
  return "net.connect." + reversed_host(host) + "." + std::to_string(port);
}

std::string net_fetch(std::string_view host) {
  return "net.fetch." + reversed_host(host);
}

namespace {

// "device.usb.1d50.6018": a kind and two ids of four lower-case hex digits.
std::string device_ids(const char* kind, unsigned vendor, unsigned product) {
  std::array<char, 48> buf{};
  std::snprintf(buf.data(), buf.size(), "device.%s.%04x.%04x", kind, vendor & 0xffff, product & 0xffff);
  return buf.data();
}

}  // namespace

std::string device_usb(unsigned vendor, unsigned product) {
  return device_ids("usb", vendor, product);
}

std::string device_path(std::string_view path) {
  std::string out = "device.path";
  std::size_t at = 0;
  while (at < path.size()) {
    std::size_t slash = path.find('/', at);
    if (slash == std::string_view::npos) slash = path.size();
    if (slash > at) out += "." + escape_label(path.substr(at, slash - at));
    at = slash + 1;
  }
  return out == "device.path" ? out + "._" : out;
}

std::string device_tty_serial(std::string_view serial) {
  return "device.tty.serial." + escape_label(serial);
}

std::string device_tty(unsigned vendor, unsigned product) {
  return device_ids("tty", vendor, product);
}

std::string mcp_network(std::string_view server) {
  return "mcp." + escape_label(server) + ".network";
}

std::string mcp_tool(std::string_view server, std::string_view tool) {
  bool plain = !tool.empty() && tool != "_";
  for (std::size_t i = 0; plain && i < tool.size(); ++i) {
    const char c = tool[i];
    if (c == '_')
      plain = !(i + 2 < tool.size() && hex_value(tool[i + 1]) >= 0 && hex_value(tool[i + 2]) >= 0);
    else
      plain = kept_as_is(c);
  }
  return "mcp." + escape_label(server) + ".tool." + (plain ? std::string(tool) : escape_label(tool));
}

}  // namespace chock::policy
