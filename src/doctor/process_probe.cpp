// How a call's processes are made and ended: a child made with CLONE_PIDFD
// is killed and reaped through its pidfd, as a cancel does it; and clone3
// with CLONE_INTO_CGROUP, which a supplied cgroup needs, into the caller's
// own cgroup. Both use sandbox::clone_with_pidfd, the sandbox's own clone.
// And whether this kernel seals a memfd non-executable, as every call's are.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>

#include "doctor/probes.hpp"
#include "sandbox/cgroup.hpp"
#include "sandbox/clone.hpp"
#include "sandbox/seccomp.hpp"
#include "util/syscalls.hpp"

namespace chock::doctor {
namespace {

constexpr const char* kPidfdRow = "pidfd";
constexpr const char* kCgroupCloneRow = "clone3 into cgroup";
constexpr const char* kMemfdRow = "memfd exec";

void pidfd_body(const Reporter& out) noexcept {
  int block[2];
  if (::pipe2(block, O_CLOEXEC) != 0) {
    out.fail("pipe2", errno);
    return;
  }
  int pidfd = -1;
  const long pid = sandbox::clone_with_pidfd(&pidfd, -1);
  if (pid < 0) {
    out.fail("clone3(CLONE_PIDFD)", static_cast<int>(-pid));
    return;
  }
  if (pid == 0) {
    // Waits to be killed; EOF (the probe died) ends it as well.
    ::close(block[1]);
    char c = 0;
    [[maybe_unused]] const ssize_t ended = ::read(block[0], &c, 1);  // the parent's close, or its byte
    child_exit(0);
  }
  ::close(block[0]);
  out.ok("clone3(CLONE_PIDFD)", pid);
  if (sys::pidfd_send_signal(pidfd, SIGKILL) != 0) {
    out.fail("pidfd_send_signal(SIGKILL)", errno);
    return;
  }
  out.ok("pidfd_send_signal(SIGKILL)");
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
    out.fail("waitid(P_PIDFD)", errno);
    return;
  }
  if (info.si_pid != pid || info.si_code != CLD_KILLED || info.si_status != SIGKILL) {
    out.fail("waitid(P_PIDFD) saw another end than SIGKILL", 0, info.si_status);
    return;
  }
  out.ok("waitid(P_PIDFD)", info.si_status);
  ::close(block[1]);
  ::close(pidfd);
}

void cgroup_clone_body(int cgroup_fd, const Reporter& out) noexcept {
  int pidfd = -1;
  const long pid = sandbox::clone_with_pidfd(&pidfd, cgroup_fd);
  if (pid < 0) {
    out.fail("clone3(CLONE_INTO_CGROUP)", static_cast<int>(-pid));
    return;
  }
  if (pid == 0) child_exit(0);
  out.ok("clone3(CLONE_INTO_CGROUP)", pid);
  siginfo_t info{};
  if (::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED) != 0) {
    out.fail("waitid(P_PIDFD)", errno);
    return;
  }
  out.ok("waitid(P_PIDFD)");
  ::close(pidfd);
}

std::string read_all(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The caller's own cgroup on the unified mount, as a path, or why there is none.
Expected<std::string> own_cgroup_dir() {
  const cgroup::Sources sources;
  auto mount = cgroup::find_cgroup2_mount(read_all(sources.mountinfo));
  if (!mount) return Error{"no cgroup2 mount in " + sources.mountinfo, "", 0};
  auto own = cgroup::unified_path(read_all(sources.self_cgroup));
  if (!own) return Error{"not in the unified hierarchy: " + sources.self_cgroup + " has no 0:: line", "", 0};
  if (mount->root == "/") return mount->point + (*own == "/" ? std::string() : *own);
  if (own->compare(0, mount->root.size(), mount->root) == 0 &&
      (own->size() == mount->root.size() || (*own)[mount->root.size()] == '/'))
    return mount->point + own->substr(mount->root.size());
  return Error{"cgroup " + *own + " is outside the cgroup2 mount at " + mount->point, "", 0};
}

// What the keeper makes of every memfd_create of a call: one created with
// MFD_NOEXEC_SEAL has no execute bit, can be given none, and execve refuses it.
void memfd_body(const Reporter& out) noexcept {
  const int fd =
      static_cast<int>(::syscall(SYS_memfd_create, "chock-doctor", MFD_CLOEXEC | seccomp::kMfdNoexecSeal));
  if (fd < 0) {
    out.fail("memfd_create(MFD_NOEXEC_SEAL)", errno);
    return;
  }
  out.ok("memfd_create(MFD_NOEXEC_SEAL)");
  if (::write(fd, "#!/bin/sh\n", 10) != 10) {
    out.fail("write", errno);
    return;
  }
  if (::fchmod(fd, 0755) == 0 || errno != EPERM) {
    out.fail("fchmod(0755) of the memfd (expected EPERM)", errno);
    return;
  }
  out.ok("fchmod(0755)", EPERM);
  char* const argv[] = {nullptr};
  ::syscall(SYS_execveat, fd, "", argv, argv, AT_EMPTY_PATH);
  if (errno != EACCES) {
    out.fail("execveat of the memfd (expected EACCES)", errno);
    return;
  }
  out.ok("execveat", EACCES);
}

}  // namespace

Row memfd_row() {
#if !defined(__x86_64__)
  return make_row(kMemfdRow, Level::degraded, false,
                  "Chock adds MFD_NOEXEC_SEAL on x86_64 only: a call can run a memfd through /proc/self/fd");
#else
  ChildResult r = run_child([](const Reporter& out) noexcept { memfd_body(out); });
  if (!r.passed())
    return make_row(kMemfdRow, Level::degraded, false,
                    r.describe() +
                        ": this kernel cannot seal a memfd non-executable (Linux 6.3+), so a call can run "
                        "one through /proc/self/fd");
  return make_row(kMemfdRow, Level::ok, false,
                  "every memfd of a call is sealed non-executable (the keeper adds MFD_NOEXEC_SEAL, "
                  "the filter refuses MFD_EXEC): execve of one answers EACCES");
#endif
}

Row pidfd_row() {
  ChildResult r = run_child([](const Reporter& out) noexcept { pidfd_body(out); });
  if (!r.passed()) return make_row(kPidfdRow, Level::off, true, r.describe());
  return make_row(
      kPidfdRow, Level::ok, true,
      "a child made with CLONE_PIDFD is killed by pidfd_send_signal and reaped by waitid(P_PIDFD)");
}

Row clone_into_cgroup_row() {
  // Both cgroup promises place the process this way; neither stops a call.
  const char* nobody = "; a call still runs, without a cgroup of its own, and a supplied cgroup is refused";
  auto dir = own_cgroup_dir();
  if (!dir) return make_row(kCgroupCloneRow, Level::degraded, false, dir.error().message() + nobody);
  UniqueFd fd(::open(dir->c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd)
    return make_row(kCgroupCloneRow, Level::degraded, false, sys_error("open", *dir).message() + nobody);
  if (auto usable = cgroup::check_supplied(fd.get()); !usable)
    return make_row(kCgroupCloneRow, Level::degraded, false, usable.error().message() + nobody);
  const int cgroup_fd = fd.get();
  ChildResult r = run_child([cgroup_fd](const Reporter& out) noexcept { cgroup_clone_body(cgroup_fd, out); });
  if (!r.passed()) {
    std::string reason = r.describe();
    if (const Note* f = r.failure(); f != nullptr && f->error != 0)
      reason = std::string(f->step) + " into " + *dir + ": " + errno_name(f->error) + " (" +
               cgroup::placement_error(f->error).what + ")";
    return make_row(kCgroupCloneRow, Level::degraded, false, reason + nobody);
  }
  return make_row(kCgroupCloneRow, Level::ok, false,
                  "a child was made straight into " + *dir + ", the caller's own cgroup");
}

}  // namespace chock::doctor
