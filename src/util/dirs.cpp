#include "util/dirs.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <vector>

#include "util/passwd.hpp"

namespace chock {

std::string dir_of_self() {
  std::string path(PATH_MAX, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", path.data(), path.size() - 1);
  if (n <= 0) return "";
  path.resize(static_cast<std::size_t>(n));
  return path.substr(0, path.rfind('/'));
}

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string(".");
}

Expected<std::string> chock_dir(Xdg kind) {
  struct Base {
    const char* variable;
    const char* below_home;
    const char* what;
  };
  static constexpr Base kBases[] = {{"XDG_CONFIG_HOME", "/.config", "config"},
                                    {"XDG_DATA_HOME", "/.local/share", "data"},
                                    {"XDG_STATE_HOME", "/.local/state", "state"},
                                    {"XDG_CACHE_HOME", "/.cache", "cache"}};
  const Base& b = kBases[static_cast<int>(kind)];
  const char* xdg = std::getenv(b.variable);
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/chock";
  const std::string home = home_directory();
  if (home.empty())
    return Error{std::string("find the ") + b.what + " directory: neither " + b.variable +
                     " nor HOME is an absolute path",
                 "", 0};
  return home + b.below_home + "/chock";
}

Expected<std::string> companion(std::string_view name) {
  const std::string self = dir_of_self();
  const std::string n(name);
  std::vector<std::string> places;
  if (!self.empty()) places = {self + "/" + n, self + "/../libexec/chock/" + n};
#ifdef CHOCK_INSTALL_LIBEXECDIR
  places.push_back(std::string(CHOCK_INSTALL_LIBEXECDIR) + "/chock/" + n);
#endif
#ifdef CHOCK_INSTALL_BINDIR
  places.push_back(std::string(CHOCK_INSTALL_BINDIR) + "/" + n);
#endif
  std::string looked;
  for (const auto& p : places) {
    if (::access(p.c_str(), X_OK) == 0) return p;
    looked += (looked.empty() ? "" : ", ") + p;
  }
  return Error{"find " + n + " (a program of Chock's own) in " + (looked.empty() ? "no place" : looked), "",
               ENOENT};
}

}  // namespace chock
