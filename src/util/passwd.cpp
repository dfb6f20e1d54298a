#include "util/passwd.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string_view>
#include <utility>

namespace chock {

namespace {

// Field `n` (0-based) of a colon-separated line.
std::string_view field(std::string_view line, int n) {
  for (int i = 0; i < n; ++i) {
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return {};
    line.remove_prefix(colon + 1);
  }
  return line.substr(0, line.find(':'));
}

bool parse_id(std::string_view text, unsigned long& out) {
  if (text.empty()) return false;
  unsigned long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<unsigned long>(c - '0');
  }
  out = v;
  return true;
}

}  // namespace

std::optional<PasswdEntry> passwd_entry(uid_t uid) {
  std::ifstream in("/etc/passwd");
  std::string line;
  while (std::getline(in, line)) {
    unsigned long u = 0;
    unsigned long g = 0;
    if (!parse_id(field(line, 2), u) || u != uid || !parse_id(field(line, 3), g)) continue;
    return PasswdEntry{static_cast<gid_t>(g), std::string(field(line, 5))};
  }
  return std::nullopt;
}

std::string home_directory() {
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] == '/') return home;
  auto entry = passwd_entry(::getuid());
  return entry && !entry->home.empty() && entry->home[0] == '/' ? entry->home : std::string();
}

gid_t group_of(uid_t uid) {
  // Asked for every file given to the owner: the password database is read once a uid.
  static thread_local std::optional<std::pair<uid_t, gid_t>> known;
  if (known && known->first == uid) return known->second;
  auto entry = passwd_entry(uid);
  known.emplace(uid, entry ? entry->gid : static_cast<gid_t>(uid));
  return known->second;
}

}  // namespace chock
