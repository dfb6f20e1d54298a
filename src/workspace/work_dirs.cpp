// A work directory of its own for each mount a task makes. overlayfs empties
// and remakes <workdir>/work at every mount; calls mount one at a time (the
// mounts lock), but later calls mount beside a running task, and one sharing
// the task's work directory would remake it under the task's mount: the
// task's next copy-up found it gone. A task's stays until the session goes.
#include <sys/random.h>
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "chock/workspace.hpp"
#include "workspace/build.hpp"

namespace chock::workspace {

Expected<std::string> build::own_work_dir(const std::string& root) {
  std::uint64_t nonce = 0;
  if (::getrandom(&nonce, sizeof nonce, 0) != static_cast<ssize_t>(sizeof nonce))
    return sys_error("getrandom, for a work directory's name");
  char name[24];
  std::snprintf(name, sizeof name, "t-%016llx", static_cast<unsigned long long>(nonce));
  std::string dir = root + "/" + name;
  if (::mkdir(dir.c_str(), 0700) != 0) return sys_error("create the overlay's work directory", dir);
  return dir;
}

}  // namespace chock::workspace
