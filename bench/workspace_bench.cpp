// Opening a workspace for a 20,000-file project: Chock's git worktree and
// overlay against `git worktree add` alone, side by side in one run.
//   build/bin/workspace_bench [--benchmark_filter=...]
// Run it as root and as an ordinary user: a root caller's workspace is
// chowned to the run uid (git), and its overlay's lower layer is the project
// idmapped to the run uid, or a copy where the project's file system takes no
// idmapped mount (timed on a ramfs, root only). Figures: bench/README.md.
#include <benchmark/benchmark.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "chock/workspace.hpp"

extern char** environ;

namespace {

constexpr int kDirs = 200;
constexpr int kFilesPerDir = 100;  // 20,000 files

void sh(const std::string& command) {
  if (std::system(command.c_str()) != 0) throw std::runtime_error("failed: " + command);
}

struct Projects {
  std::string root;
  std::string git;    // a repository with 20,000 committed files
  std::string plain;  // the same files, no git
  // A root caller's copy of them on a ramfs (which takes no idmapped mount),
  // in a mount namespace of this process's own; empty for anyone else.
  std::string plain_on_ramfs;
  Projects() {
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp != nullptr ? tmp : "/tmp") + "/chock-bench.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp");
    root = tmpl;
    ::setenv("XDG_DATA_HOME", (root + "/data").c_str(), 1);
    ::setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    ::setenv("GIT_CONFIG_SYSTEM", "/dev/null", 1);
    git = root + "/git";
    plain = root + "/plain";
    for (const std::string& p : {git, plain}) {
      ::mkdir(p.c_str(), 0755);
      for (int d = 0; d < kDirs; ++d) {
        std::string dir = p + "/src" + std::to_string(d);
        ::mkdir(dir.c_str(), 0755);
        for (int f = 0; f < kFilesPerDir; ++f) {
          std::ofstream(dir + "/file" + std::to_string(f) + ".c")
              << "// file " << d << "/" << f << "\nint f" << d << "_" << f << "(void) { return " << f
              << "; }\n";
        }
      }
    }
    sh("cd '" + git +
       "' && git init -q -b main && git add -A && git -c user.name=b -c user.email=b@b commit -qm files");
    if (::geteuid() == 0) {
      plain_on_ramfs = root + "/plain-ramfs";
      ::mkdir(plain_on_ramfs.c_str(), 0755);
      if (::unshare(CLONE_NEWNS) != 0 || ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("ramfs", plain_on_ramfs.c_str(), "ramfs", 0, "mode=0755") != 0)
        throw std::runtime_error("mount a ramfs in a mount namespace of this process");
      sh("cp -a '" + plain + "/.' '" + plain_on_ramfs + "/'");
    }
  }
  ~Projects() {
    if (!plain_on_ramfs.empty()) ::umount2(plain_on_ramfs.c_str(), MNT_DETACH);
    sh("rm -rf '" + root + "'");
  }
};

Projects& projects() {
  static Projects p;
  return p;
}

void BM_GitWorktreeAdd(benchmark::State& state) {
  auto& p = projects();
  int n = 0;
  for (auto _ : state) {
    std::string wt = p.root + "/wt" + std::to_string(n++);
    sh("git -C '" + p.git + "' worktree add -q --detach '" + wt + "' HEAD");
    state.PauseTiming();
    sh("git -C '" + p.git + "' worktree remove --force '" + wt + "'");
    state.ResumeTiming();
  }
}

void open_and_remove(benchmark::State& state, const std::string& project,
                     const std::vector<std::string>& deny = {}) {
  for (auto _ : state) {
    chock::workspace::OpenOptions o;
    o.project = project;
    o.deny = deny;
    auto opened = chock::workspace::open(o);
    if (!opened) {
      state.SkipWithError(opened.error().message().c_str());
      return;
    }
    state.PauseTiming();
    std::string id = opened->session.id;
    opened->lock = chock::workspace::SessionLock();
    if (auto r = chock::workspace::remove(id, true); !r) state.SkipWithError(r.error().message().c_str());
    state.ResumeTiming();
  }
}

void BM_ChockGitWorkspace(benchmark::State& state) {
  open_and_remove(state, projects().git);
}
// With a denied path the call's git reads a pack of the reachable objects
// rather than the repository's store (src/workspace/git_view.cpp): the
// pack is made when the session is. Loose objects first (the repository as
// committed), then the same after `git gc` (as most repositories are).
void BM_ChockGitWorkspaceDenyingAFileLooseObjects(benchmark::State& state) {
  open_and_remove(state, projects().git, {"secret.env"});
}
void BM_ChockGitWorkspaceDenyingAFilePackedObjects(benchmark::State& state) {
  static bool packed = false;
  if (!packed) {
    sh("git -C '" + projects().git + "' gc -q");
    packed = true;
  }
  open_and_remove(state, projects().git, {"secret.env"});
}
void BM_ChockOverlayWorkspace(benchmark::State& state) {
  open_and_remove(state, projects().plain);
}
void BM_ChockOverlayWorkspaceCopied(benchmark::State& state) {
  if (projects().plain_on_ramfs.empty()) {
    state.SkipWithError("only a root caller's project is copied");
    return;
  }
  open_and_remove(state, projects().plain_on_ramfs);
}

BENCHMARK(BM_GitWorktreeAdd)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChockGitWorkspace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChockGitWorkspaceDenyingAFileLooseObjects)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChockGitWorkspaceDenyingAFilePackedObjects)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChockGitWorkspace)
    ->Name("BM_ChockGitWorkspace/after_gc")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK(BM_ChockOverlayWorkspace)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_ChockOverlayWorkspaceCopied)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
