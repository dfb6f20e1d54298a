#include "reliability_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

namespace chock::test::reliability {

namespace {

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") out.push_back(name);
  }
  ::closedir(d);
  return out;
}

// Files and directories below `dir` (not following links), `except` and what is below them left out.
std::size_t count_below(const std::string& dir, const std::vector<std::string>& except) {
  std::size_t n = 0;
  for (const auto& name : entries(dir)) {
    const std::string path = dir + "/" + name;
    if (std::find(except.begin(), except.end(), path) != except.end()) continue;
    ++n;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) n += count_below(path, except);
  }
  return n;
}

bool under(const std::string& path, const std::string& root) {
  return path == root ||
         (path.size() > root.size() && path.compare(0, root.size(), root) == 0 && path[root.size()] == '/');
}

std::string own_cgroup_dir() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("0::")) {
      for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        const std::string dir = std::string(mount) + line.substr(3);
        struct stat st {};
        if (::stat((std::string(mount) + "/cgroup.controllers").c_str(), &st) == 0) return dir;
      }
    }
  return {};
}

}  // namespace

bool long_profile() {
  const char* p = std::getenv("CHOCK_RELIABILITY_PROFILE");
  return p != nullptr && std::string(p) == "long";
}

std::size_t profile_count(std::size_t short_count, std::size_t long_count) {
  return long_profile() ? long_count : short_count;
}

Footprint footprint(const Watched& watched) {
  Footprint f;
  f.own_fds = entries("/proc/self/fd").size() - 1;  // less the one that lists them
  const std::string me = std::to_string(::getpid());
  for (const auto& pid : entries("/proc")) {
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat("/proc/" + pid + "/stat");
    std::string text;
    std::getline(stat, text);
    const auto close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    std::string state, ppid;
    rest >> state >> ppid;
    if (ppid != me) continue;
    ++f.children;
    if (state == "Z") ++f.zombies;
  }
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    for (const auto& r : watched.mount_roots)
      if (under(point, r)) ++f.mounts_below;
  }
  f.tmp_entries = entries(watched.tmp_dir).size();
  for (const auto& name : entries("/dev/shm")) {
    struct stat st {};
    if (::lstat(("/dev/shm/" + name).c_str(), &st) == 0 && st.st_uid == ::geteuid()) ++f.shm_entries;
  }
  f.data_entries = count_below(watched.data_dir, watched.except);
  if (const std::string cg = own_cgroup_dir(); !cg.empty())
    for (const auto& name : entries(cg)) {
      struct stat st {};
      if (::lstat((cg + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) ++f.cgroup_entries;
    }
  return f;
}

std::string describe(const Footprint& f) {
  std::ostringstream out;
  out << "fds " << f.own_fds << ", children " << f.children << " (zombies " << f.zombies << "), mounts "
      << f.mounts_below << ", TMPDIR entries " << f.tmp_entries << ", /dev/shm entries " << f.shm_entries
      << ", data directory entries " << f.data_entries << ", cgroup directories " << f.cgroup_entries;
  return out.str();
}

Killed run_and_kill(const std::vector<std::string>& args, const RunOptions& options,
                    std::chrono::microseconds kill_after) {
  std::vector<std::string> argv{chock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = merged_environment(options);
  std::vector<char*> c_argv, c_env;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  for (auto& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  Killed k;
  if (rc != 0) return k;
  const auto deadline = std::chrono::steady_clock::now() + kill_after;
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      k.killed = ::kill(pid, SIGKILL) == 0;
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  k.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  k.killed = k.killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
  return k;
}

namespace {

// What changes state when chock calls it. write() to stdio is left out: a
// message on stderr is not a step of the work.
const std::set<std::string>& changing_calls() {
  static const std::set<std::string> calls{
      "clone",     "clone3",    "vfork",   "rename",  "renameat",         "renameat2", "write",    "pwrite64",
      "fsync",     "fdatasync", "mkdir",   "mkdirat", "unlink",           "unlinkat",  "rmdir",    "flock",
      "ftruncate", "link",      "linkat",  "symlink", "symlinkat",        "fchown",    "fchownat", "fchmod",
      "fchmodat",  "mount",     "umount2", "kill",    "pidfd_send_signal"};
  return calls;
}

std::string strace_binary() {
  for (const char* dir : {"/usr/bin", "/bin", "/usr/local/bin"}) {
    const std::string path = std::string(dir) + "/strace";
    if (::access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// "PID  rest" of one line of `strace -f`.
std::pair<std::string, std::string> split_pid(const std::string& line) {
  const std::size_t gap = line.find(' ');
  if (gap == std::string::npos) return {"", line};
  const std::size_t rest = line.find_first_not_of(' ', gap);
  return {line.substr(0, gap), rest == std::string::npos ? "" : line.substr(rest)};
}

// The name of the call a line enters ("mkdir" of "mkdir(...) = 0"), "" for
// resumptions, signals and exits.
std::string entered_call(const std::string& rest) {
  std::size_t n = 0;
  while (n < rest.size() && (std::isalnum(static_cast<unsigned char>(rest[n])) != 0 || rest[n] == '_')) ++n;
  return n > 0 && n < rest.size() && rest[n] == '(' ? rest.substr(0, n) : "";
}

}  // namespace

std::string strace_unusable() {
  const std::string strace = strace_binary();
  if (strace.empty()) return "strace is not installed (scripts/install-deps installs it)";
  Output o = run_process({strace, "-qq", "-o", "/dev/null", "-e", "inject=getppid:signal=KILL:when=1", "sh",
                          "-c", "echo $PPID"});
  if (o.signal != SIGKILL)
    return "strace cannot trace and kill a child here (status " + std::to_string(o.status) + ": " + o.err +
           ")";
  return "";
}

std::vector<Step> steps_of(const std::vector<std::string>& args, const RunOptions& options) {
  TempDir dir("chock-steps");
  const std::string trace = dir.path() + "/trace";
  std::string calls = "execve";
  for (const auto& c : changing_calls()) calls += "," + c;
  std::vector<std::string> argv{
      strace_binary(), "-f", "-qq", "-o", trace, "-e", "signal=none", "-e", "trace=" + calls, chock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  Output o = run_process(argv, options);
  std::vector<Step> steps;
  if (o.status != 0) return steps;
  std::ifstream in(trace);
  std::vector<std::pair<std::string, std::string>> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(split_pid(line));
  if (lines.empty()) return steps;
  const std::string chock = lines.front().first;
  // The command line a child ran last: what a spawn step is named by.
  std::map<std::string, std::string> ran;
  for (const auto& [pid, rest] : lines)
    if (pid != chock && entered_call(rest) == "execve") {
      const std::size_t open = rest.find('['), close = rest.find(']');
      if (open != std::string::npos && close != std::string::npos)
        ran[pid] = rest.substr(open, close - open + 1);
    }
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& [pid, rest] = lines[i];
    if (pid != chock) continue;
    const std::string call = entered_call(rest);
    if (call.empty()) continue;
    const std::size_t occurrence = ++seen[call];
    if (changing_calls().count(call) == 0) continue;
    if (rest.find("= -1 E") != std::string::npos) continue;  // failed: the same state as the step before
    if (call == "write" &&
        (rest.rfind("write(0,", 0) == 0 || rest.rfind("write(1,", 0) == 0 || rest.rfind("write(2,", 0) == 0))
      continue;
    Step step{call, occurrence, rest.substr(0, 160)};
    if (call == "clone" || call == "clone3" || call == "vfork") {
      // The child's pid is the call's result, here or where it resumes.
      std::string result = rest;
      if (rest.find("<unfinished") != std::string::npos)
        for (std::size_t j = i + 1; j < lines.size(); ++j)
          if (lines[j].first == chock && lines[j].second.find("<... " + call + " resumed>") == 0) {
            result = lines[j].second;
            break;
          }
      const std::size_t eq = result.rfind("= ");
      const std::string child = eq == std::string::npos ? "" : result.substr(eq + 2);
      step.what = "spawn " + (ran.count(child) != 0 ? ran[child] : "(a process of the call)");
    }
    steps.push_back(std::move(step));
  }
  return steps;
}

Killed kill_before(const Step& step, const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{
      strace_binary(),
      "-qq",
      "-o",
      "/dev/null",
      "-e",
      "signal=none",
      "-e",
      "trace=" + step.syscall,
      "-e",
      "inject=" + step.syscall + ":signal=KILL:when=" + std::to_string(step.occurrence),
      chock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  Output o = run_process(argv, options);
  Killed k;
  k.status = o.status;
  k.killed = o.signal == SIGKILL;
  k.out = o.out;
  return k;
}

std::vector<Step> spread(const std::vector<Step>& steps, std::size_t count) {
  if (steps.size() <= count) return steps;
  std::vector<Step> out;
  if (count == 1) out.push_back(steps.front());
  for (std::size_t i = 0; count > 1 && i < count; ++i)
    out.push_back(steps[i * (steps.size() - 1) / (count - 1)]);
  return out;
}

std::vector<pid_t> processes_with(const std::string& needle) {
  std::vector<pid_t> out;
  for (const auto& pid : entries("/proc")) {
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    // A process may end while it is read (its cmdline then reads as ESRCH): it is not there.
    std::string cmd;
    try {
      std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
      cmd.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    if (cmd.find(needle) != std::string::npos) out.push_back(static_cast<pid_t>(std::stol(pid)));
  }
  return out;
}

}  // namespace chock::test::reliability
