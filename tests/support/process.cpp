#include "process.hpp"

#include <fcntl.h>
#include <ftw.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace chock::test {
namespace {

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  out.reserve(v.size() + 1);
  for (auto& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

}  // namespace

std::vector<std::string> merged_environment(const RunOptions& options) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& name : options.unset_env) env.erase(name);
  for (const auto& [k, v] : options.env) env[k] = v;
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

Output run_process(const std::vector<std::string>& argv_in, const RunOptions& options) {
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe2 failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  for (int fd : options.keep_fds) {
    // dup2 onto itself clears FD_CLOEXEC for that descriptor in the child.
    posix_spawn_file_actions_adddup2(&actions, fd, fd);
  }
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t all_default;
  sigfillset(&all_default);
  posix_spawnattr_setsigdefault(&attr, &all_default);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);

  std::vector<std::string> argv = argv_in;
  std::vector<std::string> env = merged_environment(options);
  auto c_argv = c_strings(argv);
  auto c_env = c_strings(env);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, c_argv[0], &actions, &attr, c_argv.data(), c_env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  close(in[0]);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    close(err[0]);
    Output o;
    o.status = 127;
    o.err = std::string("spawn ") + argv[0] + ": " + std::strerror(rc);
    return o;
  }
  // Write stdin fully first (tests send small inputs), then read both outputs.
  signal(SIGPIPE, SIG_IGN);
  const char* p = options.stdin_data.data();
  size_t left = options.stdin_data.size();
  while (left > 0) {
    ssize_t n = write(in[1], p, left);
    if (n <= 0) break;
    p += n;
    left -= static_cast<size_t>(n);
  }
  close(in[1]);

  Output o;
  const auto started = std::chrono::steady_clock::now();
  auto deadline = started + options.timeout;
  std::optional<std::chrono::steady_clock::time_point> signalled;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  int open_count = 2;
  char buf[65536];
  while (open_count > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (options.signal != 0 && !signalled && now >= started + options.signal_after) {
      kill(pid, options.signal);
      signalled = now;
    }
    auto until = deadline;
    if (options.signal != 0 && !signalled) until = std::min(until, started + options.signal_after);
    auto remaining = std::chrono::ceil<std::chrono::milliseconds>(until - now);
    if (now >= deadline) {
      o.timed_out = true;
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      break;
    }
    int n = poll(fds, 2, static_cast<int>(remaining.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        (i == 0 ? o.out : o.err).append(buf, static_cast<size_t>(got));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_count;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (signalled && !o.timed_out)
    o.seconds_after_signal =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - *signalled).count();
  if (WIFEXITED(status)) {
    o.status = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    o.signal = WTERMSIG(status);
    o.status = 128 + WTERMSIG(status);
  }
  return o;
}

std::string stage_dir() {
  if (const char* s = std::getenv("CHOCK_STAGE"); s != nullptr && *s != '\0') return s;
  return CHOCK_STAGE_DIR;
}

std::string chock_binary() {
  return stage_dir() + "/chock";
}
std::string program(const std::string& name) {
  return stage_dir() + "/" + name;
}

Output chock(const std::vector<std::string>& args, const RunOptions& options) {
  std::vector<std::string> argv{chock_binary()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, options);
}

bool running_as_root() {
  return geteuid() == 0;
}

std::vector<std::string> with_files_mounted_in_etc(const std::string& dir,
                                                   const std::vector<std::string>& argv) {
  write_file(dir + "/hostname", "chock-container\n");
  for (const char* name : {"hosts", "resolv.conf"})
    if (exists(std::string("/etc/") + name))
      write_file(dir + "/" + name, read_file(std::string("/etc/") + name));
  const std::string mounts =
      "for f in hostname hosts resolv.conf; do [ ! -e /etc/$f ] || mount --bind \"$0/$f\" /etc/$f || exit "
      "125; "
      "done; ";
  std::vector<std::string> wrapped;
  if (running_as_root()) {
    wrapped = {"unshare", "-m", "--propagation", "private", "sh", "-c", mounts + "exec \"$@\"", dir};
  } else {
    const std::string back =
        "--map-user=" + std::to_string(::geteuid()) + " --map-group=" + std::to_string(::getegid());
    wrapped = {"unshare",
               "-U",
               "-r",
               "-m",
               "--propagation",
               "private",
               "sh",
               "-c",
               mounts + "exec unshare -U " + back + " -- \"$@\"",
               dir};
  }
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

std::string why_no_idmapped_layer(const std::string& dir) {
  utsname u{};
  int major = 0;
  int minor = 0;
  if (::uname(&u) != 0 || std::sscanf(u.release, "%d.%d", &major, &minor) != 2)
    return "the kernel's release could not be read";
  if (major < 6 || (major == 6 && minor < 15))
    return std::string("Linux ") + u.release +
           " takes no detached idmapped mount as an overlay layer (6.15 does)";
  struct statfs sf {};
  if (::statfs(dir.c_str(), &sf) != 0) return "statfs " + dir + ": " + std::strerror(errno);
  switch (static_cast<unsigned long>(sf.f_type)) {
    case EXT4_SUPER_MAGIC:
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
      return {};
    default:
      return dir + " is on a file system (magic " + std::to_string(sf.f_type) +
             ") not known to take idmapped mounts";
  }
}

TempDir::TempDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/" + prefix + ".XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr)
    throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
  // Traversable by the unprivileged uid a root caller's sandbox runs as.
  chmod(tmpl.c_str(), 0755);
  path_ = tmpl;
}

TempDir::~TempDir() {
  remove_tree(path_);
}

void write_file(const std::string& path, const std::string& content, int mode) {
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + path);
    f << content;
  }
  chmod(path.c_str(), static_cast<mode_t>(mode));
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot read " + path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

bool exists(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0;
}

namespace {

void remove_tree_once(const std::string& path) {
  // Make every directory writable and searchable first, then remove bottom-up.
  nftw(
      path.c_str(),
      [](const char* p, const struct stat* st, int type, FTW*) {
        if (type == FTW_D || type == FTW_DNR) chmod(p, (st->st_mode & 07777) | 0700);
        return 0;
      },
      64, FTW_PHYS);
  nftw(
      path.c_str(),
      [](const char* p, const struct stat*, int, FTW*) {
        ::remove(p);
        return 0;
      },
      64, FTW_DEPTH | FTW_PHYS);
}

}  // namespace

void remove_tree(const std::string& path) {
  if (path.empty() || path == "/") return;
  // nftw stops at an entry that vanishes under it: Chock's background sweeper
  // may be deleting a removed session in the same tree. Walk again until gone.
  for (int attempt = 0; attempt < 50; ++attempt) {
    remove_tree_once(path);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace chock::test
