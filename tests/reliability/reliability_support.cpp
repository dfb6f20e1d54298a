#include "reliability_support.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
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

// Files and directories below `dir` (not following links), `except` and what is below it left out.
std::size_t count_below(const std::string& dir, const std::string& except) {
  std::size_t n = 0;
  for (const auto& name : entries(dir)) {
    const std::string path = dir + "/" + name;
    if (path == except) continue;
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
