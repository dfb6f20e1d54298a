#include "sandbox/idmap.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "sandbox/clone.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

namespace {

// One more than the largest id a map may name (4294967295 is "no id").
constexpr std::uint64_t kIdSpace = 4294967295ULL;

void add_line(std::string& map, std::uint64_t inside, std::uint64_t outside, std::uint64_t count) {
  if (count == 0) return;
  map += std::to_string(inside) + " " + std::to_string(outside) + " " + std::to_string(count) + "\n";
}

// The holder of the namespace: it shares this memory (CLONE_VM), so only raw
// system calls, and it waits to be killed. It dies with the thread that made
// it, and at once if that thread is already gone.
int hold_namespace(void* parent) noexcept {
  sys::raw(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
  if (sys::raw(SYS_getppid) != *static_cast<const pid_t*>(parent)) return 1;
  for (;;) sys::raw(SYS_pause);
}

Expected<void> write_map(int proc, const char* name, const std::string& text) {
  UniqueFd fd(::openat(proc, name, O_WRONLY | O_CLOEXEC));
  if (!fd) return sys_error(std::string("open the idmapped mount's ") + name);
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    return sys_error(std::string("write the idmapped mount's ") + name + " (" +
                     text.substr(0, text.find('\n')) + ", ...)");
  return {};
}

}  // namespace

std::string swap_map(std::uint32_t from, std::uint32_t to) {
  std::string map;
  if (from == to) {
    add_line(map, 0, 0, kIdSpace);
    return map;
  }
  const std::uint64_t low = std::min(from, to);
  const std::uint64_t high = std::max(from, to);
  add_line(map, 0, 0, low);
  add_line(map, low, high, 1);
  add_line(map, low + 1, low + 1, high - low - 1);
  add_line(map, high, low, 1);
  add_line(map, high + 1, high + 1, kIdSpace - high - 1);
  return map;
}

Expected<UniqueFd> shift_namespace(const OwnerShift& shift) {
  CloneStack stack(std::size_t{16} << 10);
  int pidfd = -1;
  pid_t self = ::getpid();  // read by the holder, which shares this memory
  const long pid = clone_on_stack(&pidfd, -1, CLONE_VM | CLONE_NEWUSER, stack, hold_namespace, &self);
  if (pid < 0) return sys_error("make the user namespace of an idmapped mount");
  UniqueFd holder(pidfd);
  // Whatever happens below, the holder is killed and reaped before its stack goes.
  struct Reap {
    int fd;
    ~Reap() {
      sys::pidfd_send_signal(fd, SIGKILL);
      siginfo_t info{};
      while (waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(fd), &info, WEXITED) != 0 &&
             errno == EINTR) {
      }
    }
  } reap{holder.get()};
  UniqueFd proc(sys::open_proc_pinned(static_cast<pid_t>(pid), holder.get()));
  if (!proc) return sys_error("open the /proc directory of the idmapped mount's namespace");
  if (auto w = write_map(proc.get(), "uid_map", swap_map(shift.uid_from, shift.uid_to)); !w)
    return std::move(w).error();
  if (auto w = write_map(proc.get(), "gid_map", swap_map(shift.gid_from, shift.gid_to)); !w)
    return std::move(w).error();
  UniqueFd ns(::openat(proc.get(), "ns/user", O_RDONLY | O_CLOEXEC));
  if (!ns) return sys_error("open the idmapped mount's user namespace");
  return ns;
}

Expected<UniqueFd> shifted_clone(int dir, const std::string& path, const OwnerShift& shift) {
  auto ns = shift_namespace(shift);
  if (!ns) return std::move(ns).error();
  UniqueFd clone(sys::open_tree(dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH));
  if (!clone) return sys_error("clone the mount of", path);
  if (sys::mount_setattr(clone.get(), "", AT_EMPTY_PATH, MOUNT_ATTR_IDMAP, 0, ns->get()) != 0)
    return sys_error("idmap the mount of", path);
  return clone;
}

}  // namespace chock::sandbox
