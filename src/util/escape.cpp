#include "util/escape.hpp"

#include <cstdint>
#include <cstdio>

namespace chock {

namespace {

void hex_byte(std::string& out, unsigned char b) {
  char buf[5];
  std::snprintf(buf, sizeof buf, "\\x%02x", b);
  out += buf;
}

// The code point of a well-formed UTF-8 sequence at text[i] and its length,
// or length 0 when the bytes there are not one (overlong, surrogate, cut short).
std::pair<std::uint32_t, std::size_t> decode(std::string_view text, std::size_t i) {
  auto b = static_cast<unsigned char>(text[i]);
  std::size_t len = b >= 0xF0 && b <= 0xF4 ? 4 : b >= 0xE0 ? 3 : b >= 0xC2 && b <= 0xDF ? 2 : 0;
  if (len == 0 || i + len > text.size()) return {0, 0};
  std::uint32_t cp = b & (0x7F >> len);
  for (std::size_t k = 1; k < len; ++k) {
    auto c = static_cast<unsigned char>(text[i + k]);
    if ((c & 0xC0) != 0x80) return {0, 0};
    cp = (cp << 6) | (c & 0x3F);
  }
  bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
  if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return {0, 0};
  return {cp, len};
}

bool acts_on_a_terminal(std::uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
         cp == 0x2028 || cp == 0x2029;
}

std::string escape(std::string_view text, bool backslash) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b < 0x80) {
      switch (b) {
        case '\n':
          out += "\\n";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\\':
          out += backslash ? "\\\\" : "\\";
          break;
        default:
          if (b < 0x20 || b == 0x7F) {
            hex_byte(out, b);
          } else {
            out += static_cast<char>(b);
          }
      }
      ++i;
      continue;
    }
    auto [cp, len] = decode(text, i);
    if (len == 0) {
      hex_byte(out, b);
      ++i;
      continue;
    }
    if (acts_on_a_terminal(cp)) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
      out += buf;
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace

std::string printable(std::string_view text) {
  return escape(text, false);
}

std::string unambiguous(std::string_view text) {
  return escape(text, true);
}

}  // namespace chock
