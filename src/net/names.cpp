// Host names and IP literals as the policy table names them (chock/net.hpp).
// Every name comes from a program or a page Chock does not trust: parsed
// strictly, byte by byte, before anything else sees it.
#include <arpa/inet.h>

#include <cstdio>

#include "chock/net.hpp"

namespace chock::net {

namespace {

constexpr std::size_t kMaxName = 253;
constexpr std::size_t kMaxLabel = 63;

Error bad(std::string_view text, const std::string& why) {
  std::string shown;
  for (char c : text.substr(0, 80)) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      shown += hex;
    } else {
      shown += c;
    }
  }
  return Error{"host '" + shown + "': " + why, "", 0, Errc::bad_config};
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// A dotted quad of four decimal numbers 0-255 without leading zeros: the
// only IPv4 form Chock reads (inet_aton's "1.2.3", hex and octal forms are
// names that resolvers read differently, so they are refused, not guessed).
std::optional<in_addr> dotted_quad(std::string_view text) {
  in_addr out{};
  std::uint32_t value = 0;
  std::size_t begin = 0;
  for (int part = 0; part < 4; ++part) {
    std::size_t end = part < 3 ? text.find('.', begin) : text.size();
    if (end == std::string_view::npos || end == begin || end - begin > 3) return std::nullopt;
    const std::string_view digits = text.substr(begin, end - begin);
    if (digits.size() > 1 && digits[0] == '0') return std::nullopt;
    unsigned n = 0;
    for (char c : digits) {
      if (!is_digit(c)) return std::nullopt;
      n = n * 10 + static_cast<unsigned>(c - '0');
    }
    if (n > 255) return std::nullopt;
    value = (value << 8) | n;
    begin = end + 1;
  }
  out.s_addr = htonl(value);
  return out;
}

Host ip4_host(const in_addr& a) {
  Host h;
  h.kind = Host::Kind::ip4;
  char text[INET_ADDRSTRLEN];
  ::inet_ntop(AF_INET, &a, text, sizeof text);
  h.text = text;
  h.labels = "ip4." + h.text;
  auto* sin = reinterpret_cast<sockaddr_in*>(&h.address);
  sin->sin_family = AF_INET;
  sin->sin_addr = a;
  return h;
}

Host ip6_host(const in6_addr& a) {
  Host h;
  h.kind = Host::Kind::ip6;
  char text[INET6_ADDRSTRLEN];
  ::inet_ntop(AF_INET6, &a, text, sizeof text);
  h.text = text;
  h.labels = "ip6";
  for (std::size_t byte = 0; byte < 16; byte += 2) {
    char g[8];
    std::snprintf(g, sizeof g, ".%02x%02x", a.s6_addr[byte], a.s6_addr[byte + 1]);
    h.labels += g;
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&h.address);
  sin6->sin6_family = AF_INET6;
  sin6->sin6_addr = a;
  return h;
}

}  // namespace

Expected<Host> parse_host(std::string_view text) {
  if (text.empty()) return bad(text, "empty");
  if (text.front() == '[') {
    if (text.size() < 3 || text.back() != ']') return bad(text, "an IPv6 address in brackets needs its ']'");
    text = text.substr(1, text.size() - 2);
    if (text.find(':') == std::string_view::npos) return bad(text, "brackets hold an IPv6 address only");
  }
  if (text.find(':') != std::string_view::npos) {
    if (text.size() >= INET6_ADDRSTRLEN || text.find('%') != std::string_view::npos)
      return bad(text, "not an IPv6 address (a zone index is refused)");
    const std::string copy(text);
    in6_addr a{};
    if (::inet_pton(AF_INET6, copy.c_str(), &a) != 1) return bad(text, "not an IPv6 address");
    return ip6_host(a);
  }
  if (auto quad = dotted_quad(text)) return ip4_host(*quad);
  std::string name(text);
  if (name.back() == '.') name.pop_back();
  if (name.empty()) return bad(text, "empty");
  if (name.size() > kMaxName) return bad(text, "longer than 253 bytes");
  std::vector<std::string_view> labels;
  std::size_t begin = 0;
  while (begin <= name.size()) {
    std::size_t end = name.find('.', begin);
    if (end == std::string::npos) end = name.size();
    const std::string_view label(name.data() + begin, end - begin);
    if (label.empty()) return bad(text, "an empty label");
    if (label.size() > kMaxLabel) return bad(text, "a label longer than 63 bytes");
    if (label.front() == '-' || label.back() == '-') return bad(text, "a label starts or ends with '-'");
    for (char c : label) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '_';
      if (!ok)
        return bad(text, "a byte outside letters, digits, '-' and '_' (write a non-ASCII name as xn--)");
    }
    labels.push_back(label);
    begin = end + 1;
  }
  // No top-level label is all digits or hex: "1.2.3", "010.1.1.1" and "0x7f.1" are what a resolver
  // reads as an address. (What a name resolves to is checked anyway, refusal() below.)
  const std::string_view top = labels.back();
  bool digits = true;
  for (char c : top) digits = digits && is_digit(c);
  if (digits || top.starts_with("0x") || top.starts_with("0X"))
    return bad(text, "a numeric form other than a dotted quad (a resolver would read it as an address)");
  Host h;
  for (char& c : name)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  h.text = name;
  std::string last(labels.back());
  for (char& c : last)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  if (last == "ip4" || last == "ip6")
    return bad(text, "names under ip4 or ip6 are Chock's own for addresses");
  for (auto it = labels.rbegin(); it != labels.rend(); ++it) {
    if (!h.labels.empty()) h.labels += '.';
    for (char c : *it) h.labels += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return h;
}

Expected<std::pair<Host, std::uint16_t>> parse_host_port(std::string_view text) {
  std::size_t colon = std::string_view::npos;
  if (!text.empty() && text.front() == '[') {
    const std::size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return bad(text, "write an IPv6 address and port as [address]:port");
    colon = close + 1;
  } else {
    colon = text.rfind(':');
    if (colon == std::string_view::npos || text.find(':') != colon)
      return bad(text, "write host:port ([address]:port for IPv6)");
  }
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  if (port_text.empty() || port_text.size() > 5 || port_text.front() == '0')
    return bad(text, "a port is 1 to 65535");
  for (char c : port_text) {
    if (!is_digit(c)) return bad(text, "a port is 1 to 65535");
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  if (port == 0 || port > 65535) return bad(text, "a port is 1 to 65535");
  auto host = parse_host(text.substr(0, colon));
  if (!host) return std::move(host).error();
  return std::make_pair(std::move(*host), static_cast<std::uint16_t>(port));
}

std::string connect_action(const Host& host, std::uint16_t port) {
  return "net.connect." + host.labels + "." + std::to_string(port);
}

std::string fetch_action(const Host& host) {
  return "net.fetch." + host.labels;
}

}  // namespace chock::net
