#include "util/size.hpp"

#include <cstdio>
#include <limits>
#include <string>

namespace chock {

namespace {

Error bad(std::string_view flag, std::string_view text, const char* why) {
  return Error{std::string(flag) + " " + std::string(text) + ": " + why, {}, 0, Errc::bad_config};
}

// The digits at the front of text; sets `rest` to what follows.
Expected<std::uint64_t> leading_number(std::string_view flag, std::string_view text, std::string_view& rest) {
  std::size_t i = 0;
  std::uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    auto d = static_cast<std::uint64_t>(text[i] - '0');
    if (v > (std::numeric_limits<std::uint64_t>::max() - d) / 10) return bad(flag, text, "too large");
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return bad(flag, text, "expected a number");
  rest = text.substr(i);
  return v;
}

}  // namespace

Expected<std::uint64_t> parse_size(std::string_view flag, std::string_view text) {
  std::string_view unit;
  auto v = leading_number(flag, text, unit);
  if (!v) return v;
  int shift = 0;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "KiB")
    shift = 10;
  else if (unit == "MiB")
    shift = 20;
  else if (unit == "GiB")
    shift = 30;
  else if (unit == "TiB")
    shift = 40;
  else if (unit == "K" || unit == "M" || unit == "G" || unit == "T" || unit == "KB" || unit == "MB" ||
           unit == "GB" || unit == "TB" || unit == "kB")
    return bad(flag, text, "say KiB, MiB, GiB or TiB (powers of 1024)");
  else
    return bad(flag, text, "unknown unit; sizes look like 4096, 512MiB or 2GiB");
  if (shift > 0 && *v > (std::numeric_limits<std::uint64_t>::max() >> shift))
    return bad(flag, text, "too large");
  return *v << shift;
}

Expected<std::uint64_t> parse_count(std::string_view flag, std::string_view text) {
  std::string_view rest;
  auto v = leading_number(flag, text, rest);
  if (!v) return v;
  if (!rest.empty()) return bad(flag, text, "expected a whole number");
  return v;
}

std::string format_size(std::uint64_t bytes) {
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::uint64_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

std::string human_size(std::uint64_t bytes) {
  static const char* const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (unit < 4 && value >= 1024) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0 || value >= 100 || value == static_cast<double>(static_cast<std::uint64_t>(value)))
    std::snprintf(text, sizeof text, "%.0f %s", value, units[unit]);
  else
    std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

}  // namespace chock
