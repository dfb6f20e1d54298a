#include "chock/error.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/escape.hpp"

namespace chock {

const char* errno_name(int code) noexcept {
  // strerrorname_np (glibc 2.32+) is async-signal-safe and allocation-free.
  const char* name = strerrorname_np(code);
  return name != nullptr ? name : "EUNKNOWN";
}

// Paths and names in an error may come from a tool call: never raw to a terminal.
std::string Error::message() const {
  std::string out = printable(what);
  if (!path.empty()) {
    out += ": ";
    out += printable(path);
  }
  if (code != 0) {
    out += ": ";
    out += errno_name(code);
    out += " (";
    out += std::strerror(code);
    out += ")";
  }
  return out;
}

Error sys_error(std::string what, std::string path) {
  return Error{std::move(what), std::move(path), errno};
}

}  // namespace chock
