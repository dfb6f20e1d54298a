#include "sandbox/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace chock::sandbox {

namespace {

constexpr uid_t kDefaultRootCallerUid = 65534;

bool write_proc_file(const char* path, const char* text, Step step, StepFailure* failure) noexcept {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    *failure = {step, errno, -1};
    return false;
  }
  ssize_t n = write(fd, text, std::strlen(text));
  int err = errno;
  close(fd);
  if (n < 0) {
    *failure = {step, err, -1};
    return false;
  }
  return true;
}

}  // namespace

Expected<Identity> plan_identity(const Config& config) {
  Identity id;
  const bool root = geteuid() == 0;
  if (config.user && !root) {
    return Error{"--user is only for a root caller; an unprivileged caller runs as itself", "", 0,
                 Errc::bad_config};
  }
  if (root) {
    id.uid = config.user.value_or(kDefaultRootCallerUid);
    if (id.uid == 0)
      return Error{"--user 0: the sandboxed program never runs as root", "", 0, Errc::bad_config};
    id.gid = config.user ? static_cast<gid_t>(id.uid) : static_cast<gid_t>(kDefaultRootCallerUid);
    id.drop_from_root = true;
  } else {
    id.uid = geteuid();
    id.gid = getegid();
  }
  id.unshare_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC;
  if (config.network != Network::host) id.unshare_flags |= CLONE_NEWNET;
  std::snprintf(id.uid_map, sizeof id.uid_map, "%u %u 1\n", id.uid, id.uid);
  std::snprintf(id.gid_map, sizeof id.gid_map, "%u %u 1\n", id.gid, id.gid);
  return id;
}

bool drop_to_identity(const Identity& id, StepFailure* failure) noexcept {
  if (!id.drop_from_root) return true;
  // The raw calls: glibc's wrappers change the ids of every thread of the
  // process they believe they are in, which for the middle is the caller's.
  if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, id.gid, id.gid, id.gid) != 0 ||
      syscall(SYS_setresuid, id.uid, id.uid, id.uid) != 0) {
    *failure = {Step::drop_uid, errno, -1};
    return false;
  }
  // A uid change clears "dumpable", which would make /proc/self/uid_map
  // root's and unwritable to us.
  if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) {
    *failure = {Step::drop_uid, errno, -1};
    return false;
  }
  return true;
}

bool enter_namespaces(const Identity& id, StepFailure* failure) noexcept {
  if (unshare(id.unshare_flags) != 0) {
    *failure = {Step::unshare, errno, -1};
    return false;
  }
  return write_proc_file("/proc/self/setgroups", "deny", Step::setgroups, failure) &&
         write_proc_file("/proc/self/uid_map", id.uid_map, Step::uid_map, failure) &&
         write_proc_file("/proc/self/gid_map", id.gid_map, Step::gid_map, failure);
}

}  // namespace chock::sandbox
