#include "sandbox/namespaces.hpp"

#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

constexpr uid_t kDefaultRootCallerUid = 65534;

bool failed(StepFailure* failure, Step step, long rc) noexcept {
  *failure = {step, static_cast<int>(-rc), -1};
  return false;
}

bool write_proc_file(int dir, const char* name, const char* text, Step step, StepFailure* failure) noexcept {
  const long fd = sys::raw(SYS_openat, dir, sys::arg(name), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return failed(failure, step, fd);
  const long n = sys::raw(SYS_write, fd, sys::arg(text), static_cast<long>(std::strlen(text)));
  sys::raw(SYS_close, fd);
  if (n < 0) return failed(failure, step, n);
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

bool drop_to_identity(const Identity& id, bool stay_dumpable, StepFailure* failure) noexcept {
  if (!id.drop_from_root) return true;
  long rc = 0;
  if ((rc = sys::raw(SYS_setgroups, 0, 0)) < 0 ||
      (rc = sys::raw(SYS_setresgid, id.gid, id.gid, id.gid)) < 0 ||
      (rc = sys::raw(SYS_setresuid, id.uid, id.uid, id.uid)) < 0)
    return failed(failure, Step::drop_uid, rc);
  // The uid change left the memory as dumpable as fs.suid_dumpable says.
  if ((rc = sys::raw(SYS_prctl, PR_SET_DUMPABLE, stay_dumpable ? 1 : 0)) < 0)
    return failed(failure, Step::drop_uid, rc);
  return true;
}

bool enter_namespaces(const Identity& id, bool own_maps, StepFailure* failure) noexcept {
  const long rc = sys::raw(SYS_unshare, id.unshare_flags);
  if (rc < 0) return failed(failure, Step::unshare, rc);
  if (!own_maps) return true;
  const long self = sys::raw(SYS_openat, AT_FDCWD, sys::arg("/proc/self"), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (self < 0) return failed(failure, Step::uid_map, self);
  const bool ok = write_maps(static_cast<int>(self), id, failure);
  sys::raw(SYS_close, self);
  return ok;
}

bool write_maps(int proc_pid_dir, const Identity& id, StepFailure* failure) noexcept {
  return write_proc_file(proc_pid_dir, "setgroups", "deny", Step::setgroups, failure) &&
         write_proc_file(proc_pid_dir, "uid_map", id.uid_map, Step::uid_map, failure) &&
         write_proc_file(proc_pid_dir, "gid_map", id.gid_map, Step::gid_map, failure);
}

bool forbid_nested_user_namespaces() noexcept {
  // The sysctl is the writer's user namespace's, whichever procfs serves it.
  int fd = ::open("/proc/sys/user/max_user_namespaces", O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, "0", 1) == 1;
  const int saved = errno;
  ::close(fd);
  errno = saved;
  return ok;
}

bool bring_up_loopback() noexcept {
  int s = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return false;
  ifreq ifr{};
  std::memcpy(ifr.ifr_name, "lo", 3);
  bool ok = ::ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
  if (ok) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
    ok = ::ioctl(s, SIOCSIFFLAGS, &ifr) == 0;
  }
  const int saved = errno;
  ::close(s);
  errno = saved;
  return ok;
}

}  // namespace chock::sandbox
