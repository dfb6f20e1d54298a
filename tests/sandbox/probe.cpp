// A small program the tests run inside a sandbox. Each subcommand tries one
// thing and prints what happened ("ok ..." or the errno's name), so a test
// can assert the exact way a defence stopped it.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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
  if (c == "exit" && argc == 3) return std::atoi(argv[2]);
  if (c == "raise" && argc == 3) {
    raise(std::atoi(argv[2]));
    return 99;
  }
  std::fprintf(stderr, "probe: unknown case %s\n", c.c_str());
  return 2;
}
