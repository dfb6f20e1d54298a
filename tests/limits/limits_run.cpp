// limits-run: the limits layer alone, around one program, with no namespace.
// It does what the sandbox core does with the limits (prepare, clone3 into the
// cgroup, the floor as the last step before exec, the keeper's exit watch,
// naming the kill, teardown), so the layer is tested for real on any kernel,
// the VM's included, independently of the rest of the sandbox.
//   limits-run [--memory S] [--data S] [--pids N] [--nofile N] [--fsize S] [--cpu N]
//              [--cgroup DIR] [--enosys-clone3] [--result FILE] -- PROGRAM ARGS...
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "cli/limit_flags.hpp"
#include "sandbox/exit_watch.hpp"
#include "sandbox/kill_naming.hpp"
#include "sandbox/limits.hpp"
#include "sandbox/rlimits.hpp"
#include "util/syscalls.hpp"

namespace {

int fail(const std::string& line) {
  std::fprintf(stderr, "limits-run: %s\n", line.c_str());
  return 125;
}

// What a seccomp filter answering ENOSYS for clone3 looks like to Chock.
bool install_enosys_clone3() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr) return false;
  bool ok = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) == 0 &&
            prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && seccomp_load(ctx) == 0;
  seccomp_release(ctx);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"limits-run"};
  chock::cli::LimitFlags flags;
  chock::cli::add_limit_flags(chock::cli::Command(app), flags);
  bool enosys = false;
  std::string result_file;
  std::vector<std::string> command;
  app.add_flag("--enosys-clone3", enosys);
  app.add_option("--result", result_file);
  app.add_option("command", command)->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return fail(e.what());
  }

  chock::Config config;
  chock::UniqueFd cgroup_dir;
  if (auto ok = chock::cli::apply_limit_flags(flags, config, cgroup_dir); !ok)
    return fail(ok.error().message());
  auto setup = chock::prepare_limits(config);
  if (!setup) return fail(setup.error().message());
  if (enosys && !install_enosys_clone3()) return fail("could not install the clone3 filter");
  // Without memory.max, the call's memory is measured by the sandbox's keeper
  // over its own pid namespace; this program has neither.
  if (!flags.memory.empty() && setup->managed.state() != chock::CgroupState::ok)
    return fail("--memory needs a cgroup here (the sandbox measures it in its own pid namespace)");

  std::vector<char*> args;
  for (auto& a : command) args.push_back(a.data());
  args.push_back(nullptr);
  chock::exit_watch::Watch watch = setup->watch();
  chock::UniqueFd proc(chock::exit_watch::open_private_proc());
  if (!proc) proc.reset(open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  watch.proc_fd = proc.get();
  int sync[2];
  if (pipe2(sync, O_CLOEXEC) != 0) return fail("pipe");

  chock::sys::CloneArgs ca;
  ca.exit_signal = SIGCHLD;
  if (setup->clone_cgroup_fd >= 0) {
    ca.flags |= CLONE_INTO_CGROUP;
    ca.cgroup = static_cast<std::uint64_t>(setup->clone_cgroup_fd);
  }
  long pid = chock::sys::clone3(&ca);
  if (pid < 0 && setup->clone_cgroup_fd >= 0) {
    if (auto refusal = setup->placement_failed(errno)) return fail(refusal->message());
    ca.flags &= ~static_cast<std::uint64_t>(CLONE_INTO_CGROUP);
    ca.cgroup = 0;
    pid = chock::sys::clone3(&ca);
  }
  if (pid < 0) return fail(std::string("clone3: ") + chock::errno_name(errno));
  if (pid == 0) {
    // The program: wait until the keeper has seized us, then the floor, then exec.
    close(sync[1]);
    char byte = 0;
    while (read(sync[0], &byte, 1) < 0 && errno == EINTR) {
    }
    // A root caller's program runs as nobody, as the sandbox runs it.
    if (getuid() == 0 && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
                          setresuid(65534, 65534, 65534) != 0))
      _exit(125);
    // RLIMIT_NPROC counts per user namespace (5.14+): a namespace of its own
    // makes the count this program's tree, as in the sandbox.
    if (unshare(CLONE_NEWUSER) != 0) {
      const char* msg = "limits-run: unshare(CLONE_NEWUSER) failed\n";
      (void)!write(2, msg, __builtin_strlen(msg));
      _exit(125);
    }
    int resource = 0;
    if (int err = chock::rlimits::apply(setup->plan, &resource); err != 0) {
      const char* msg = "limits-run: setrlimit failed\n";
      (void)!write(2, msg, __builtin_strlen(msg));
      _exit(125);
    }
    execvp(args[0], args.data());
    _exit(errno == ENOENT ? 127 : 126);
  }
  close(sync[0]);
  auto program = static_cast<pid_t>(pid);
  if (int err = chock::exit_watch::seize(watch, program); err != 0)
    std::fprintf(stderr, "limits-run: not traced: %s\n", chock::errno_name(err));
  (void)!write(sync[1], "g", 1);
  close(sync[1]);

  int status = 0;
  for (;;) {
    int st = 0;
    pid_t got = waitpid(-1, &st, __WALL);
    if (got < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (std::getenv("LIMITS_RUN_TRACE") != nullptr) std::fprintf(stderr, "wait %d %#x\n", got, st);
    if (chock::exit_watch::on_wait(watch, got, st)) continue;
    if (got == program && (WIFEXITED(st) || WIFSIGNALED(st))) {
      status = st;
      break;
    }
  }
  // As the keeper's end ends the pid namespace in the sandbox: kill what the
  // program left in its cgroup and see each traced task out, so none waits
  // in an exit stop for a tracer that stopped listening.
  if (setup->managed.state() == chock::CgroupState::ok) {
    setup->managed.kill();
    for (int st = 0;;) {
      pid_t got = waitpid(-1, &st, __WALL);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) break;
      chock::exit_watch::on_wait(watch, got, st);
    }
  }
  chock::Result result;
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) result.signal = WTERMSIG(status);
  chock::finish_limits(*setup, result, watch.evidence);
  if (std::getenv("LIMITS_RUN_EVIDENCE") != nullptr) {
    const auto& e = watch.evidence;
    std::fprintf(stderr,
                 "evidence: traced=%u proc=%u tasks_peak=%u exit_fds_max=%u exit_data_max=%llu xfsz_efbig=%u "
                 "xcpu_over_soft=%u cpu_ticks_max=%llu\n",
                 e.traced, e.proc, e.tasks_peak, e.exit_fds_max,
                 static_cast<unsigned long long>(e.exit_data_max), e.xfsz_efbig, e.xcpu_over_soft,
                 static_cast<unsigned long long>(e.cpu_ticks_max));
  }
  std::string message = chock::kill_message(result.limits);
  if (!message.empty()) std::fprintf(stderr, "%s\n", message.c_str());
  if (!result_file.empty()) std::ofstream(result_file) << result.to_json() << "\n";
  return result.exit_status();
}
