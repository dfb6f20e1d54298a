// Programs that run into a limit, one mode each, for the limits tests. Each
// says on stderr how it ended when it still can.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

int fork_bomb() {
  // Children wait until the parent ends; the parent forks until refused.
  int n = 0;
  for (;;) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    if (pid < 0) {
      std::fprintf(stderr, "fork refused after %d children: %s\n", n, strerrorname_np(errno));
      return 1;
    }
    ++n;
    if (n > 100000) return 0;
  }
}

int fd_bomb(bool close_after) {
  std::vector<int> fds;
  for (;;) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd < 0) {
      std::fprintf(stderr, "open refused after %zu files: %s\n", fds.size(), strerrorname_np(errno));
      if (!close_after) return 1;
      for (int f : fds) close(f);
      return 0;
    }
    fds.push_back(fd);
  }
}

int write_big(const char* path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) {
    std::perror(path);
    return 2;
  }
  static char chunk[1 << 16];
  std::memset(chunk, 'x', sizeof chunk);
  for (long total = 0; total < (1L << 34); total += sizeof chunk) {
    if (write(fd, chunk, sizeof chunk) < 0) {
      std::fprintf(stderr, "write refused: %s\n", strerrorname_np(errno));
      return 1;
    }
  }
  return 0;
}

int spin() {
  volatile unsigned long x = 0;
  for (;;) x = x + 1;
}

int mem_hog(std::size_t chunk_mib) {
  std::size_t total = 0;
  for (;;) {
    std::size_t size = chunk_mib << 20;
    auto* p = static_cast<char*>(std::malloc(size));
    if (p == nullptr) {
      std::fprintf(stderr, "allocation refused after %zu MiB: %s\n", total >> 20, strerrorname_np(errno));
      return 1;
    }
    for (std::size_t i = 0; i < size; i += 4096) p[i] = 1;  // touch: make it memory, not address space
    total += size;
  }
}

// `procs` processes of `mib` MiB each, touched, held for a few seconds.
int mem_procs(int procs, std::size_t mib) {
  for (int i = 1; i < procs; ++i)
    if (fork() == 0) break;
  auto* p = static_cast<volatile char*>(std::malloc(mib << 20));
  if (p == nullptr) return 1;
  for (std::size_t i = 0; i < (mib << 20); i += 4096) p[i] = 1;
  sleep(2);
  int status = 0;
  while (wait(&status) > 0) {
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return 1;
  }
  return 0;
}

// `mib` MiB touched and held for `seconds`, then a clean exit.
int hold(std::size_t mib, unsigned seconds) {
  auto* p = static_cast<volatile char*>(std::malloc(mib << 20));
  if (p == nullptr) return 1;
  for (std::size_t i = 0; i < (mib << 20); i += 4096) p[i] = 1;
  std::puts("held");
  std::fflush(stdout);
  sleep(seconds);
  return 0;
}

// Shared anonymous memory: charged to the cgroup, not counted in VmData, so
// only memory.max stops it.
int shm_hog(std::size_t chunk_mib) {
  for (;;) {
    std::size_t size = chunk_mib << 20;
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    std::memset(p, 1, size);
  }
}

// Leaves a process behind that outlives the program: its pid goes to `path`.
int orphan(const char* path) {
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    // Whole or not at all: the program waits for the name to appear.
    std::string tmp = std::string(path) + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "w");
    std::fprintf(f, "%d\n", getpid());
    std::fclose(f);
    std::rename(tmp.c_str(), path);
    for (;;) pause();
  }
  int st = 0;
  waitpid(pid, &st, 0);
  for (int i = 0; i < 1000 && access(path, F_OK) != 0; ++i) usleep(1000);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(
        stderr,
        "usage: limit-bomb fork|fd|fd-then-close|write FILE|spin|mem MiB|shm MiB|hold MiB SECONDS|orphan "
        "FILE|raise SIG|ok\n");
    return 2;
  }
  std::string_view mode = argv[1];
  if (mode == "fork") return fork_bomb();
  if (mode == "fd") return fd_bomb(false);
  if (mode == "fd-then-close") return fd_bomb(true);
  if (mode == "write" && argc > 2) return write_big(argv[2]);
  if (mode == "spin") return spin();
  if (mode == "shm") return shm_hog(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 8);
  if (mode == "orphan" && argc > 2) return orphan(argv[2]);
  if (mode == "mem") return mem_hog(argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 16);
  if (mode == "hold" && argc > 3)
    return hold(std::strtoul(argv[2], nullptr, 10), static_cast<unsigned>(std::atoi(argv[3])));
  if (mode == "mem_procs" && argc > 3)
    return mem_procs(std::atoi(argv[2]), std::strtoul(argv[3], nullptr, 10));
  // A program raising a limit's signal on itself: no limit stopped it.
  if (mode == "raise" && argc > 2) {
    kill(getpid(), std::atoi(argv[2]));
    return 3;
  }
  // Under the default floor: a few files, a child, some memory, all fine.
  if (mode == "ok") {
    for (int i = 0; i < 64; ++i) close(open("/dev/null", O_RDONLY));
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    int st = 0;
    waitpid(pid, &st, 0);
    auto* p = static_cast<char*>(std::malloc(64 << 20));
    for (std::size_t i = 0; i < (64u << 20); i += 4096) p[i] = 1;
    std::puts("ok");
    return 0;
  }
  std::fprintf(stderr, "limit-bomb: unknown mode %s\n", argv[1]);
  return 2;
}
