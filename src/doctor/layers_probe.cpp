// The layers a tool call's program takes on last: Landlock, the seccomp
// filter and the rlimit floor, each applied in a child with the code the
// sandbox uses (landlock::apply, seccomp::install, rlimits::apply) and then
// tested against what it must refuse.
#include <fcntl.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "doctor/probes.hpp"
#include "sandbox/landlock.hpp"
#include "sandbox/rlimits.hpp"
#include "sandbox/seccomp.hpp"
#include "util/size.hpp"

namespace chock::doctor {
namespace {

constexpr const char* kLandlockRow = "landlock";
constexpr const char* kSeccompRow = "seccomp";
constexpr const char* kRlimitRow = "rlimit floor";

// --- Landlock ---------------------------------------------------------------

struct LandlockProbe {
  landlock::Prepared prepared;
  std::string inside;   // a file beneath the one rule
  std::string outside;  // a readable file the rule does not cover
};

void landlock_body(const LandlockProbe& p, const Reporter& out) noexcept {
  landlock::Failure f{};
  if (!landlock::apply(p.prepared, &f)) {
    out.fail(f.step, f.error);
    return;
  }
  out.ok("landlock_restrict_self");
  int fd = ::open(p.inside.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    out.fail("open a file beneath the rule", errno);
    return;
  }
  ::close(fd);
  out.ok("open a file beneath the rule");
  fd = ::open(p.outside.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::close(fd);
    out.fail("open a file outside the rule (expected EACCES)", 0);
    return;
  }
  if (errno != EACCES) {
    out.fail("open a file outside the rule (expected EACCES)", errno);
    return;
  }
  out.ok("open a file outside the rule", EACCES);
}

Expected<std::string> make_readable_file(const std::string& dir) {
  std::string path = dir + "/file";
  std::ofstream f(path);
  if (!(f << "chock doctor\n")) return Error{"write a probe file", path, errno};
  f.close();
  ::chmod(path.c_str(), 0644);
  return path;
}

// --- seccomp ----------------------------------------------------------------

struct FilterProbe {
  seccomp::Program program;
  bool allow_jit = false;
};

void filter_body(const FilterProbe& p, const Reporter& out) noexcept {
  // The killed call ends this process with SIGSYS, which dumps core by
  // default; a probe must leave no core file (or crash report) behind.
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    out.fail("prctl(PR_SET_NO_NEW_PRIVS)", errno);
    return;
  }
  int error = 0;
  if (!seccomp::join_fresh_session_keyring(&error)) {
    out.fail("keyctl(KEYCTL_JOIN_SESSION_KEYRING)", error);
    return;
  }
  if (!seccomp::install(p.program, &error)) {
    out.fail("seccomp(SECCOMP_SET_MODE_FILTER)", error);
    return;
  }
  out.ok("seccomp(SECCOMP_SET_MODE_FILTER)", static_cast<long long>(p.program.instructions.size()));

  void* page = ::mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  const int mmap_error = page == MAP_FAILED ? errno : 0;
  if (page != MAP_FAILED) ::munmap(page, 4096);
  if (p.allow_jit) {
    if (mmap_error != 0) {
      out.fail("mmap(PROT_WRITE|PROT_EXEC) under the JIT filter", mmap_error);
      return;
    }
    out.ok("mmap(PROT_WRITE|PROT_EXEC) under the JIT filter");
  } else {
    // The rule stops the call for the keeper, which answers EPERM; this
    // probe has no keeper, and the kernel answers ENOSYS for it.
    if (mmap_error != ENOSYS) {
      out.fail("mmap(PROT_WRITE|PROT_EXEC) (expected ENOSYS, with no keeper to answer EPERM)", mmap_error);
      return;
    }
    out.ok("mmap(PROT_WRITE|PROT_EXEC)", ENOSYS);
  }

  io_uring_params params{};
  const long ring = ::syscall(SYS_io_uring_setup, 1, &params);
  if (ring >= 0 || errno != EPERM) {
    const int err = ring >= 0 ? 0 : errno;
    if (ring >= 0) ::close(static_cast<int>(ring));
    out.fail("io_uring_setup (expected EPERM)", err);
    return;
  }
  out.ok("io_uring_setup", EPERM);

  // unshare with no flags changes nothing: if the filter let it through, the
  // probe is wrong and nothing else is.
  out.ok("unshare(0)");
  const long rc = ::syscall(SYS_unshare, 0);
  out.fail("unshare(0) returned instead of killing the process", rc == 0 ? 0 : errno, rc);
}

// --- rlimit floor -----------------------------------------------------------

void rlimit_body(const rlimits::Plan& plan, const Reporter& out) noexcept {
  int failed = 0;
  if (const int err = rlimits::apply(plan, &failed); err != 0) {
    out.fail("prlimit64", err, failed);
    return;
  }
  out.ok("prlimit64");
  for (std::size_t i = 0; i < plan.count; ++i) {
    const rlimits::Entry& e = plan.entries[i];
    rlimit got{};
    if (::getrlimit(static_cast<__rlimit_resource>(e.resource), &got) != 0) {
      out.fail("getrlimit", errno, e.resource);
      return;
    }
    if (got.rlim_cur != e.soft || got.rlim_max != e.hard) {
      out.fail("getrlimit read back another value", 0, e.resource);
      return;
    }
  }
  out.ok("getrlimit", static_cast<long long>(plan.count));
}

std::string floor_text(const rlimits::Plan& plan) {
  std::string out;
  for (const auto& r : rlimits::report(plan)) {
    if (!out.empty()) out += ", ";
    out += r.name + " ";
    const bool bytes = r.name == "data" || r.name == "fsize";
    out += bytes ? format_size(r.soft) : std::to_string(r.soft);
    if (r.name == "cpu") out += " s (hard " + std::to_string(r.hard) + ")";
  }
  return out;
}

}  // namespace

Row landlock_row(const Context& context) {
  errno = 0;
  const int abi = landlock::probe_abi();
  const int probe_errno = abi == 0 ? errno : 0;
  auto in_dir = context.scratch.subdir("landlock-in");
  auto out_dir = context.scratch.subdir("landlock-out");
  if (!in_dir || !out_dir)
    return make_row(kLandlockRow, Level::off, true, (!in_dir ? in_dir : out_dir).error().message());
  auto inside = make_readable_file(*in_dir);
  auto outside = make_readable_file(*out_dir);
  if (!inside || !outside)
    return make_row(kLandlockRow, Level::off, true, (!inside ? inside : outside).error().message());
  // One read-only rule, masked to what the kernel answered, as prepare() does.
  auto prepared =
      landlock::prepare_for(abi, probe_errno, {{*in_dir, landlock::grant(Access::read_only, abi)}});
  if (!prepared) return make_row(kLandlockRow, Level::off, true, prepared.error().what);
  LandlockProbe p{std::move(*prepared), *inside, *outside};
  ChildResult r = run_child([&p](const Reporter& out) noexcept { landlock_body(p, out); });
  if (!r.passed())
    return make_row(kLandlockRow, Level::off, true, "ABI " + std::to_string(abi) + ": " + r.describe());

  LandlockReport report = landlock::report(p.prepared);
  std::string reason = "ABI " + std::to_string(abi) + "; a path outside the rules is refused with EACCES; ";
  Level level = Level::ok;
  if (report.missing.empty()) {
    reason += "every filesystem right handled";
  } else {
    level = Level::degraded;
    reason += "this kernel lacks";
    for (const auto& name : report.missing) reason += " " + name;
    reason += " (masked out of every rule)";
  }
  reason += report.scoped_abstract_unix && report.scoped_signals
                ? "; abstract unix sockets and signals scoped"
                : "; abstract unix sockets and signals not scoped (ABI 6)";
  return make_row(kLandlockRow, level, true, reason);
}

ChildResult try_filter(bool allow_jit) {
  auto program = seccomp::build(allow_jit);
  if (!program) {
    ChildResult r;
    r.harness_error = program.error().message();
    return r;
  }
  FilterProbe p{std::move(*program), allow_jit};
  return run_child([&p](const Reporter& out) noexcept { filter_body(p, out); });
}

bool filter_held(const ChildResult& r) {
  return r.harness_error.empty() && !r.timed_out && r.failure() == nullptr && r.signal &&
         *r.signal == SIGSYS && r.last() != nullptr && std::string(r.last()->step) == "unshare(0)";
}

Row seccomp_row(const ChildResult& r) {
  if (!filter_held(r)) {
    std::string reason = r.describe();
    if (const Note* f = r.failure(); f != nullptr && std::string(f->step).rfind("seccomp(", 0) == 0) {
      if (f->error == ENOSYS || f->error == EINVAL)
        reason += ": this kernel has no seccomp filter mode (or a filter around chock hides it)";
    }
    return make_row(kSeccompRow, Level::off, true, reason);
  }
  const long long size = r.notes.front().value;
  return make_row(
      kSeccompRow, Level::ok, true,
      "Chock's strict filter (" + std::to_string(size) +
          " instructions) installs; unshare(0) ends the process with SIGSYS; io_uring_setup "
          "answers EPERM; a writable+executable mmap is refused (EPERM from the keeper in a call, "
          "ENOSYS here with none)");
}

Row rlimit_row() {
  auto plan = rlimits::prepare(Limits{});
  if (!plan) return make_row(kRlimitRow, Level::off, true, plan.error().message());
  const rlimits::Plan floor = *plan;
  ChildResult r = run_child([&floor](const Reporter& out) noexcept { rlimit_body(floor, out); });
  if (!r.passed()) {
    std::string reason = r.describe();
    // Every failing step of this probe carries the resource in its value.
    if (const Note* f = r.failure(); f != nullptr)
      reason += " (" + std::string(rlimits::resource_name(static_cast<int>(f->value))) + ")";
    return make_row(kRlimitRow, Level::off, true, reason);
  }
  return make_row(kRlimitRow, Level::ok, true, "set and read back: " + floor_text(floor));
}

}  // namespace chock::doctor
