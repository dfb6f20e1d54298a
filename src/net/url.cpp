// URLs for `chock fetch` (chock/net.hpp). Strict on purpose: a URL that two
// parsers could read differently (a backslash, userinfo, a space) is refused
// rather than guessed at, and only the rebuilt form is passed on.
#include <string>

#include "chock/net.hpp"
#include "util/escape.hpp"

namespace chock::net {

namespace {

Error bad(std::string_view url, const std::string& why) {
  return Error{"URL \"" + printable(url.substr(0, 200)) + "\" refused: " + why, "", 0, Errc::bad_config};
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

std::string Url::authority() const {
  std::string out = host.kind == Host::Kind::ip6 ? "[" + host.text + "]" : host.text;
  const std::uint16_t standard = scheme == "https" ? 443 : 80;
  if (port != standard) out += ":" + std::to_string(port);
  return out;
}

std::string Url::text() const {
  return scheme + "://" + authority() + target;
}

Expected<Url> parse_url(std::string_view text) {
  if (text.empty()) return bad(text, "empty");
  if (text.size() > 8192) return bad(text, "longer than 8192 bytes");
  for (char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f) return bad(text, "a space, control or non-ASCII byte (percent-encode it)");
    if (c == '\\') return bad(text, "a backslash (parsers disagree on what it means)");
  }
  const std::size_t colon = text.find("://");
  if (colon == std::string_view::npos) return bad(text, "no scheme: write http://HOST/ or https://HOST/");
  Url url;
  url.scheme = lower(text.substr(0, colon));
  if (url.scheme != "http" && url.scheme != "https")
    return bad(text, "the scheme " + url.scheme + " (only http and https are fetched)");
  std::string_view rest = text.substr(colon + 3);
  if (const std::size_t hash = rest.find('#'); hash != std::string_view::npos) rest = rest.substr(0, hash);
  const std::size_t end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, end);
  std::string_view target = end == std::string_view::npos ? std::string_view() : rest.substr(end);
  if (authority.find('@') != std::string_view::npos)
    return bad(text, "a user or password in the URL (credentials are never sent)");
  if (authority.empty()) return bad(text, "no host");
  std::string_view host_text = authority;
  std::string_view port_text;
  if (authority.front() == '[') {
    const std::size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad(text, "an IPv6 address without its ']'");
    host_text = authority.substr(0, close + 1);
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad(text, "bytes after the IPv6 address's ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return bad(text, "an empty port");
    }
  } else if (const std::size_t c = authority.find(':'); c != std::string_view::npos) {
    host_text = authority.substr(0, c);
    port_text = authority.substr(c + 1);
    if (port_text.empty()) return bad(text, "an empty port");
  }
  if (host_text.find('%') != std::string_view::npos) return bad(text, "a percent-encoded host");
  auto host = parse_host(host_text);
  if (!host) return bad(text, host.error().what);
  url.host = std::move(*host);
  if (port_text.empty()) {
    url.port = url.scheme == "https" ? 443 : 80;
  } else {
    unsigned port = 0;
    if (port_text.size() > 5) return bad(text, "a port is 1 to 65535");
    for (char c : port_text) {
      if (c < '0' || c > '9') return bad(text, "a port is 1 to 65535");
      port = port * 10 + static_cast<unsigned>(c - '0');
    }
    if (port == 0 || port > 65535) return bad(text, "a port is 1 to 65535");
    url.port = static_cast<std::uint16_t>(port);
  }
  if (target.empty() || target.front() == '?') url.target = "/";
  url.target += std::string(target);
  return url;
}

}  // namespace chock::net
