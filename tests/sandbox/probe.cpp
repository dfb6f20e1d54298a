// A small program the tests run inside a sandbox. Each subcommand tries one
// thing and prints what happened ("ok ..." or the errno's name), so a test
// can assert the exact way a defence stopped it.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

int say_errno() {
  std::printf("%s\n", strerrorname_np(errno));
  return 0;
}

int write_file(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return say_errno();
  if (write(fd, "probe\n", 6) != 6) return say_errno();
  close(fd);
  std::printf("ok\n");
  return 0;
}

int read_file(const char* path) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return say_errno();
  char buf[4096];
  long total = 0;
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0) return say_errno();
    if (n == 0) break;
    total += n;
  }
  close(fd);
  std::printf("ok %ld\n", total);
  return 0;
}

int stat_path(const char* path) {
  struct stat st {};
  if (lstat(path, &st) != 0) return say_errno();
  std::printf("ok\n");
  return 0;
}

int tcp_connect(const char* ip, const char* port) {
  int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return say_errno();
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::atoi(port)));
  inet_pton(AF_INET, ip, &addr.sin_addr);
  if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) return say_errno();
  std::printf("ok\n");
  return 0;
}

int unix_pair() {
  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) return say_errno();
  if (write(sv[0], "x", 1) != 1) return say_errno();
  char c = 0;
  if (read(sv[1], &c, 1) != 1 || c != 'x') return say_errno();
  std::printf("ok\n");
  return 0;
}

int signal_pid(const char* pid) {
  if (kill(static_cast<pid_t>(std::atol(pid)), 0) != 0) return say_errno();
  std::printf("ok\n");
  return 0;
}

int fd_state(const char* fd) {
  std::printf("%s\n", fcntl(std::atoi(fd), F_GETFD) < 0 ? "closed" : "open");
  return 0;
}

int pids() {
  DIR* d = opendir("/proc");
  if (d == nullptr) return say_errno();
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] >= '0' && e->d_name[0] <= '9') std::printf("%s\n", e->d_name);
  }
  closedir(d);
  return 0;
}

// A grandchild whose parent is gone becomes pid 1's to reap. Count zombies
// after it has exited.
int zombie() {
  pid_t child = fork();
  if (child == 0) {
    if (fork() == 0) {
      usleep(100 * 1000);
      _exit(0);
    }
    _exit(0);
  }
  waitpid(child, nullptr, 0);
  usleep(600 * 1000);
  int zombies = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::string path = std::string("/proc/") + e->d_name + "/stat";
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) continue;
    char buf[512] = {};
    size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* close_paren = std::strrchr(buf, ')');
    if (close_paren != nullptr && close_paren[1] == ' ' && close_paren[2] == 'Z') ++zombies;
  }
  closedir(d);
  std::printf("zombies %d\n", zombies);
  return 0;
}

int identity() {
  std::printf("uid %u euid %u gid %u\n", getuid(), geteuid(), getgid());
  FILE* f = std::fopen("/proc/self/status", "r");
  if (f == nullptr) return say_errno();
  char line[256];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::strncmp(line, "Cap", 3) == 0 || std::strncmp(line, "NoNewPrivs", 10) == 0 ||
        std::strncmp(line, "Seccomp:", 8) == 0)
      std::fputs(line, stdout);
  }
  std::fclose(f);
  return 0;
}

int stdin_source() {
  char buf[256] = {};
  ssize_t n = readlink("/proc/self/fd/0", buf, sizeof buf - 1);
  if (n < 0) return say_errno();
  std::printf("%s\n", buf);
  return 0;
}

int cat_stdin() {
  char buf[4096];
  ssize_t n;
  while ((n = read(0, buf, sizeof buf)) > 0) fwrite(buf, 1, static_cast<size_t>(n), stdout);
  return 0;
}

// Every entry of a directory, sorted, one "TYPE NAME" line each (c, b, d, l,
// f, p, s), so a test can compare the whole listing.
int list_dir(const char* path) {
  DIR* d = opendir(path);
  if (d == nullptr) return say_errno();
  std::vector<std::string> lines;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    char type = S_ISCHR(st.st_mode)    ? 'c'
                : S_ISBLK(st.st_mode)  ? 'b'
                : S_ISDIR(st.st_mode)  ? 'd'
                : S_ISLNK(st.st_mode)  ? 'l'
                : S_ISFIFO(st.st_mode) ? 'p'
                : S_ISSOCK(st.st_mode) ? 's'
                                       : 'f';
    lines.push_back(std::string(1, type) + " " + name);
  }
  closedir(d);
  std::sort(lines.begin(), lines.end());
  for (const auto& l : lines) std::printf("%s\n", l.c_str());
  return 0;
}

int statfs_path(const char* path) {
  struct statfs fs {};
  if (statfs(path, &fs) != 0) return say_errno();
  std::printf("type %#lx bytes %llu\n", static_cast<unsigned long>(fs.f_type),
              static_cast<unsigned long long>(fs.f_blocks) * static_cast<unsigned long long>(fs.f_bsize));
  return 0;
}

// Writes until refused, or until `max_mib` (so a missing cap fails the test
// instead of filling memory): "ENOSPC after N" or "ok N".
int fill(const char* path, const char* max_mib) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return say_errno();
  static char chunk[1 << 16];
  std::memset(chunk, 'x', sizeof chunk);
  const long long max = std::atoll(max_mib) << 20;
  long long total = 0;
  while (total < max) {
    ssize_t n = write(fd, chunk, sizeof chunk);
    if (n < 0) {
      std::printf("%s after %lld\n", strerrorname_np(errno), total);
      return 0;
    }
    total += n;
  }
  std::printf("ok %lld\n", total);
  return 0;
}

// The per-mount options of the mount at `point` (the last one: the top of
// the stack), from /proc/self/mountinfo.
int mount_options(const char* point) {
  FILE* f = std::fopen("/proc/self/mountinfo", "r");
  if (f == nullptr) return say_errno();
  char line[4096];
  std::string found;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char mnt_point[4096];
    char options[4096];
    if (std::sscanf(line, "%*s %*s %*s %*s %4095s %4095s", mnt_point, options) == 2 &&
        std::strcmp(mnt_point, point) == 0)
      found = options;
  }
  std::fclose(f);
  std::printf("%s\n", found.empty() ? "ENOENT" : found.c_str());
  return 0;
}

// Every mount this process sees, one "POINT FSTYPE" line each, from
// /proc/self/mountinfo (the type follows the " - " separator).
int mounts() {
  FILE* f = std::fopen("/proc/self/mountinfo", "r");
  if (f == nullptr) return say_errno();
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    char point[4096];
    char type[256];
    const char* tail = std::strstr(line, " - ");
    if (std::sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 && tail != nullptr &&
        std::sscanf(tail + 3, "%255s", type) == 1)
      std::printf("%s %s\n", point, type);
  }
  std::fclose(f);
  return 0;
}

// Opens without reading (a terminal would block a read).
int open_path(const char* path) {
  int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return say_errno();
  close(fd);
  std::printf("ok\n");
  return 0;
}

int session() {
  std::printf("sid %d pid %d pgrp %d\n", getsid(0), getpid(), getpgrp());
  return 0;
}

int namespace_link(const char* name) {
  char buf[256] = {};
  std::string path = std::string("/proc/self/ns/") + name;
  if (readlink(path.c_str(), buf, sizeof buf - 1) < 0) return say_errno();
  std::printf("%s\n", buf);
  return 0;
}

int print_text(const char* path) {
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return say_errno();
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) std::fwrite(buf, 1, n, stdout);
  std::fclose(f);
  return 0;
}

int securebits() {
  int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
  if (bits < 0) return say_errno();
  std::printf("%#x\n", bits);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc < 2) {
    std::fprintf(stderr, "usage: probe CASE [ARGS]\n");
    return 2;
  }
  std::string c = argv[1];
  if (c == "write" && argc == 3) return write_file(argv[2]);
  if (c == "read" && argc == 3) return read_file(argv[2]);
  if (c == "stat" && argc == 3) return stat_path(argv[2]);
  if (c == "connect" && argc == 4) return tcp_connect(argv[2], argv[3]);
  if (c == "socketpair") return unix_pair();
  if (c == "kill" && argc == 3) return signal_pid(argv[2]);
  if (c == "fd" && argc == 3) return fd_state(argv[2]);
  if (c == "pids") return pids();
  if (c == "zombie") return zombie();
  if (c == "identity") return identity();
  if (c == "stdin") return stdin_source();
  if (c == "cat") return cat_stdin();
  if (c == "ls" && argc == 3) return list_dir(argv[2]);
  if (c == "statfs" && argc == 3) return statfs_path(argv[2]);
  if (c == "fill" && argc == 4) return fill(argv[2], argv[3]);
  if (c == "mountopts" && argc == 3) return mount_options(argv[2]);
  if (c == "mounts") return mounts();
  if (c == "open" && argc == 3) return open_path(argv[2]);
  if (c == "session") return session();
  if (c == "ns" && argc == 3) return namespace_link(argv[2]);
  if (c == "text" && argc == 3) return print_text(argv[2]);
  if (c == "securebits") return securebits();
  if (c == "exit" && argc == 3) return std::atoi(argv[2]);
  if (c == "raise" && argc == 3) {
    raise(std::atoi(argv[2]));
    return 99;
  }
  std::fprintf(stderr, "probe: unknown case %s\n", c.c_str());
  return 2;
}
