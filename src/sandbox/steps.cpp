#include "sandbox/steps.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "util/fd_passing.hpp"
#include "util/syscalls.hpp"

namespace chock::sandbox {

const char* step_name(Step step) noexcept {
  switch (step) {
    case Step::none:
      return "none";
    case Step::close_fds:
      return "close_fds";
    case Step::drop_uid:
      return "drop_uid";
    case Step::unshare:
      return "unshare";
    case Step::setgroups:
      return "setgroups";
    case Step::uid_map:
      return "uid_map";
    case Step::gid_map:
      return "gid_map";
    case Step::clone_keeper:
      return "clone_keeper";
    case Step::clone_program:
      return "clone_program";
    case Step::setsid:
      return "setsid";
    case Step::userns_limit:
      return "userns_limit";
    case Step::loopback:
      return "loopback";
    case Step::net_routes:
      return "net_routes";
    case Step::net_ruleset:
      return "net_ruleset";
    case Step::net_sockets:
      return "net_sockets";
    case Step::mount_private:
      return "mount_private";
    case Step::open_source:
      return "open_source";
    case Step::new_root:
      return "new_root";
    case Step::mount_tree:
      return "mount_tree";
    case Step::proc:
      return "proc";
    case Step::dev:
      return "dev";
    case Step::tmp:
      return "tmp";
    case Step::cover:
      return "cover";
    case Step::pivot_root:
      return "pivot_root";
    case Step::root_readonly:
      return "root_readonly";
    case Step::stdin:
      return "stdin";
    case Step::chdir:
      return "chdir";
    case Step::capabilities:
      return "capabilities";
    case Step::no_new_privs:
      return "no_new_privs";
    case Step::landlock_ruleset:
      return "landlock_ruleset";
    case Step::landlock_rule:
      return "landlock_rule";
    case Step::landlock_restrict:
      return "landlock_restrict";
    case Step::keyring:
      return "keyring";
    case Step::seccomp:
      return "seccomp";
    case Step::rlimits:
      return "rlimits";
    case Step::exec:
      return "exec";
    case Step::keeper_wait:
      return "keeper_wait";
  }
  return "unknown";
}

void send_record(int channel, const Record& record, int fd_to_pass) noexcept {
  iovec iov{const_cast<Record*>(&record), sizeof record};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  FdControl control;
  if (fd_to_pass >= 0) attach_fd(msg, control, fd_to_pass);
  // Raw: the middle sends too, and leaves the errno it shares alone.
  while (sys::raw(SYS_sendmsg, channel, sys::arg(&msg), MSG_NOSIGNAL) == -EINTR) {
  }
}

void fail_step(int channel, const StepFailure& failure) noexcept {
  Record r;
  r.kind = Record::setup_failed;
  r.step = failure.step;
  r.error = failure.error;
  r.detail = failure.detail;
  send_record(channel, r);
  _exit(125);
}

}  // namespace chock::sandbox
