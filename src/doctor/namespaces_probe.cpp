// The five namespaces, each made for real in a child: the identity a tool
// call runs as, unshare with the user namespace and one other, setgroups
// deny and the self-maps (sandbox::enter_namespaces, the code chock run
// uses), then a check that the namespace is really new and does its job.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <fstream>

#include "doctor/probes.hpp"

namespace chock::doctor {
namespace {

struct Case {
  const char* row;
  int flag;                // besides CLONE_NEWUSER
  const char* ns_file;     // /proc/self/ns/<ns_file> names the namespace new children get
  const char* unshare;     // the step, as a note says it
  const char* max_sysctl;  // /proc/sys/user/<max_sysctl>: the per-user-namespace limit
};

constexpr Case kCases[] = {
    {"user namespace", 0, "/proc/self/ns/user", "unshare(CLONE_NEWUSER)", "max_user_namespaces"},
    {"mount namespace", CLONE_NEWNS, "/proc/self/ns/mnt", "unshare(CLONE_NEWUSER|CLONE_NEWNS)",
     "max_mnt_namespaces"},
    // pid_for_children names nothing until the first process exists: the
    // first process itself looks at its own namespace instead.
    {"pid namespace", CLONE_NEWPID, "/proc/self/ns/pid", "unshare(CLONE_NEWUSER|CLONE_NEWPID)",
     "max_pid_namespaces"},
    {"ipc namespace", CLONE_NEWIPC, "/proc/self/ns/ipc", "unshare(CLONE_NEWUSER|CLONE_NEWIPC)",
     "max_ipc_namespaces"},
    {"net namespace", CLONE_NEWNET, "/proc/self/ns/net", "unshare(CLONE_NEWUSER|CLONE_NEWNET)",
     "max_net_namespaces"},
};

struct Probe {
  const Case* c;
  sandbox::Identity identity;
  ino_t before = 0;  // the namespace the caller is in
};

const char* step_text(const Case& c, sandbox::Step step) noexcept {
  switch (step) {
    case sandbox::Step::drop_uid:
      return "drop to the uid a call runs as";
    case sandbox::Step::unshare:
      return c.unshare;
    case sandbox::Step::setgroups:
      return "write /proc/self/setgroups";
    case sandbox::Step::uid_map:
      return "write /proc/self/uid_map";
    case sandbox::Step::gid_map:
      return "write /proc/self/gid_map";
    default:
      return sandbox::step_name(step);
  }
}

// The check after the namespace is made, for each kind. System calls only.
void check_namespace(const Probe& p, const Reporter& out) noexcept {
  switch (p.c->flag) {
    case 0:
      if (::getuid() != p.identity.uid) {
        out.fail("getuid after the uid map", 0, static_cast<long long>(::getuid()));
        return;
      }
      out.ok("getuid after the uid map", static_cast<long long>(::getuid()));
      return;
    case CLONE_NEWNS:
      // The first thing the mount tree does: only an owned namespace allows it.
      if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
        out.fail("mount(/, MS_REC|MS_PRIVATE)", errno);
        return;
      }
      out.ok("mount(/, MS_REC|MS_PRIVATE)");
      return;
    case CLONE_NEWPID: {
      const pid_t pid = ::_Fork();
      if (pid < 0) {
        out.fail("fork into the pid namespace", errno);
        return;
      }
      if (pid == 0) {
        struct stat st {};
        if (::stat(p.c->ns_file, &st) != 0)
          out.fail("stat the new namespace", errno);
        else if (st.st_ino == p.before)
          out.fail("the namespace is still the caller's", 0);
        else if (::getpid() != 1)
          out.fail("getpid in the first process", 0, ::getpid());
        else
          out.ok("getpid in the first process", 1);
        child_exit(0);
      }
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        out.fail("the first process did not exit cleanly", 0, status);
      return;
    }
    case CLONE_NEWNET: {
      // Loopback up, as a call has it: 127.0.0.1 is the namespace's own (no
      // listener: refused), and a documentation address has no route.
      if (!sandbox::bring_up_loopback()) {
        out.fail("bring up loopback", errno);
        return;
      }
      const auto tcp_connect = [](const char* ip) noexcept {
        const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) return errno;
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(9);
        ::inet_pton(AF_INET, ip, &addr.sin_addr);
        const int rc = ::connect(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
        const int err = rc == 0 ? 0 : errno;
        ::close(s);
        return err;
      };
      const int own = tcp_connect("127.0.0.1");
      if (own != ECONNREFUSED) {
        out.fail("connect to 127.0.0.1:9 (expected ECONNREFUSED)", own);
        return;
      }
      out.ok("connect to 127.0.0.1:9", own);
      const int away = tcp_connect("198.51.100.1");
      if (away != ENETUNREACH) {
        out.fail("connect to 198.51.100.1:9 (expected ENETUNREACH)", away);
        return;
      }
      out.ok("connect to 198.51.100.1:9", away);
      return;
    }
    default:
      return;  // ipc: the new inode, checked before this, is the proof
  }
}

void probe_body(const Probe& p, const Reporter& out) noexcept {
  sandbox::StepFailure f;
  if (!sandbox::drop_to_identity(p.identity, true, &f) || !sandbox::enter_namespaces(p.identity, true, &f)) {
    out.fail(step_text(*p.c, f.step), f.error);
    return;
  }
  out.ok(p.c->unshare);
  if (p.c->flag == CLONE_NEWPID) {
    check_namespace(p, out);
    return;
  }
  struct stat st {};
  if (::stat(p.c->ns_file, &st) != 0) {
    out.fail("stat the new namespace", errno);
    return;
  }
  if (st.st_ino == p.before) {
    out.fail("the namespace is still the caller's", 0);
    return;
  }
  out.ok("a new namespace");
  check_namespace(p, out);
}

std::string read_sysctl(const std::string& name) {
  std::ifstream f("/proc/sys/" + name);
  std::string value;
  if (!(f >> value)) return {};
  return value;
}

// Why an unshare was refused, in words, from what the kernel exposes.
std::string unshare_hint(const Case& c, int error) {
  switch (error) {
    case ENOSPC: {
      std::string out = "a namespace limit is reached: /proc/sys/user/max_user_namespaces is " +
                        read_sysctl("user/max_user_namespaces");
      if (c.flag != 0)
        out += ", " + std::string(c.max_sysctl) + " is " + read_sysctl(std::string("user/") + c.max_sysctl);
      return out;
    }
    case EPERM: {
      std::string out = "refused";
      if (read_sysctl("kernel/unprivileged_userns_clone") == "0")
        out += ": kernel.unprivileged_userns_clone is 0";
      else if (read_sysctl("kernel/apparmor_restrict_unprivileged_userns") == "1")
        out += ": kernel.apparmor_restrict_unprivileged_userns is 1";
      else
        out += " (by a sysctl, a security module, or a seccomp filter around chock)";
      return out;
    }
    case EINVAL:
      return "this kernel was built without this namespace";
    case ENOSYS:
      return "unshare is hidden (a seccomp filter around chock answers ENOSYS)";
    default:
      return {};
  }
}

Row row_for(const Case& c, const ChildResult& r, uid_t uid, bool root_caller) {
  if (r.passed()) {
    const bool first = c.flag == 0;
    std::string as = "as uid " + std::to_string(uid) +
                     (root_caller && first ? ", the uid a root caller's call runs as" : "");
    switch (c.flag) {
      case 0:
        return make_row(c.row, Level::ok, true,
                        "unshare, setgroups deny and the self-maps work (" + as + ")");
      case CLONE_NEWNS:
        return make_row(c.row, Level::ok, true, "a mount tree of its own, made private (" + as + ")");
      case CLONE_NEWPID:
        return make_row(c.row, Level::ok, true, "its first process is pid 1 (" + as + ")");
      case CLONE_NEWIPC:
        return make_row(c.row, Level::ok, true, "an ipc namespace of its own (" + as + ")");
      default:
        return make_row(c.row, Level::ok, true,
                        "loopback only: 127.0.0.1 and ::1 are the call's own, every other address is "
                        "unreachable (" +
                            as + ")");
    }
  }
  std::string reason = r.describe();
  const Note* f = r.failure();
  if (f != nullptr && std::string(f->step) == c.unshare) {
    std::string hint = unshare_hint(c, f->error);
    if (!hint.empty()) reason += ": " + hint;
  }
  return make_row(c.row, Level::off, true, reason);
}

// The call's own user namespace, its limit set as the program sets it, then
// clone(CLONE_NEWUSER): refused with ENOSPC, or the row is off.
void nested_body(const sandbox::Identity& identity, const Reporter& out) noexcept {
  sandbox::StepFailure f;
  if (!sandbox::drop_to_identity(identity, true, &f) || !sandbox::enter_namespaces(identity, true, &f)) {
    out.fail(sandbox::step_name(f.step), f.error);
    return;
  }
  if (!sandbox::forbid_nested_user_namespaces()) {
    out.fail("write /proc/sys/user/max_user_namespaces", errno);
    return;
  }
  out.ok("max_user_namespaces 0 in the call's user namespace");
  const long pid =
      ::syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) child_exit(0);
  if (pid > 0) {
    out.fail("clone(CLONE_NEWUSER|CLONE_NEWNET) made a namespace", 0);
    return;
  }
  if (errno != ENOSPC) {
    out.fail("clone(CLONE_NEWUSER|CLONE_NEWNET) (expected ENOSPC)", errno);
    return;
  }
  out.ok("clone(CLONE_NEWUSER|CLONE_NEWNET)", ENOSPC);
}

}  // namespace

Row nested_namespaces_row(const Context& context) {
  sandbox::Identity identity = context.identity;
  identity.unshare_flags = CLONE_NEWUSER;
  ChildResult r = run_child([&identity](const Reporter& out) noexcept { nested_body(identity, out); });
  if (r.passed())
    return make_row(
        "nested namespaces", Level::ok, true,
        "none below a call's own: clone, clone3 and unshare with CLONE_NEWUSER are refused (ENOSPC, "
        "or the filter kills unshare)");
  return make_row("nested namespaces", Level::off, true,
                  r.describe() + ": a call could make a user namespace, and chock run refuses to start one");
}

std::vector<Row> namespace_rows(const Context& context) {
  std::vector<Row> rows;
  std::vector<ChildResult> results;
  for (const Case& c : kCases) {
    Probe p{&c, context.identity, 0};
    p.identity.unshare_flags = CLONE_NEWUSER | c.flag;
    struct stat st {};
    if (::stat(c.ns_file, &st) == 0) p.before = st.st_ino;
    results.push_back(run_child([&p](const Reporter& out) noexcept { probe_body(p, out); }));
    rows.push_back(row_for(c, results.back(), context.identity.uid, context.root_caller));
  }
  // Every other namespace is made inside a user namespace: when that one is
  // refused, the others fail with it, and their rows say so rather than
  // look like four faults of their own.
  const Note* user = results.front().failure();
  if (rows.front().level != Level::off || user == nullptr || std::string(user->step) != kCases[0].unshare)
    return rows;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Note* f = results[i].failure();
    if (f != nullptr && std::string(f->step) == kCases[i].unshare && f->error == user->error)
      rows[i].reason = note_text(*f) + ": it is made inside a user namespace, which is off here";
  }
  return rows;
}

}  // namespace chock::doctor
