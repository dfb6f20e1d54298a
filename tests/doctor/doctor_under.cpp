// doctor-under MODE -- PROGRAM [ARGS...]
// Takes one layer away from PROGRAM (chock doctor) for real, then execs it:
//   --no-user-namespaces  a user namespace of its own in which
//                         /proc/sys/user/max_user_namespaces is 0, so every
//                         further unshare(CLONE_NEWUSER) gets ENOSPC
//   --hide-landlock       landlock_create_ruleset answers ENOSYS, as on a
//                         kernel without Landlock
//   --hide-seccomp        seccomp(2) answers ENOSYS and prctl(PR_SET_SECCOMP)
//                         EINVAL, as on a kernel without the filter mode
// Exits 125 when the layer could not be taken away (the test then skips).
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace {

bool write_file(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "doctor-under: open %s: %s\n", path, std::strerror(errno));
    return false;
  }
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (!ok) std::fprintf(stderr, "doctor-under: write %s: %s\n", path, std::strerror(errno));
  close(fd);
  return ok;
}

// The child makes the namespace; this process, still outside it, writes the
// child's id maps (only a process in the parent namespace may map more than
// its own id); the child lowers the limit and runs the program.
int no_user_namespaces(char** command) {
  int ready[2], mapped[2];
  if (pipe(ready) != 0 || pipe(mapped) != 0) return 125;
  const pid_t pid = fork();
  if (pid < 0) return 125;
  if (pid == 0) {
    close(ready[0]);
    close(mapped[1]);
    char c = 0;
    if (unshare(CLONE_NEWUSER) != 0) {
      std::fprintf(stderr, "doctor-under: unshare(CLONE_NEWUSER): %s\n", std::strerror(errno));
      _exit(125);
    }
    if (write(ready[1], "u", 1) != 1 || read(mapped[0], &c, 1) != 1 || c != 'm') _exit(125);
    // The owner of this namespace may lower its own limit: any user
    // namespace below it is now refused.
    if (!write_file("/proc/sys/user/max_user_namespaces", "0")) _exit(125);
    execv(command[0], command);
    std::fprintf(stderr, "doctor-under: exec %s: %s\n", command[0], std::strerror(errno));
    _exit(127);
  }
  close(ready[1]);
  close(mapped[0]);
  char c = 0;
  bool ok = read(ready[0], &c, 1) == 1;
  const std::string proc = "/proc/" + std::to_string(pid);
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  // Root maps every id, so chock can still drop to 65534 as it does outside;
  // anyone else maps itself to itself, as chock does.
  if (ok && uid == 0) {
    ok = write_file((proc + "/uid_map").c_str(), "0 0 4294967295\n") &&
         write_file((proc + "/gid_map").c_str(), "0 0 4294967295\n");
  } else if (ok) {
    ok = write_file((proc + "/setgroups").c_str(), "deny") &&
         write_file((proc + "/uid_map").c_str(), std::to_string(uid) + " " + std::to_string(uid) + " 1\n") &&
         write_file((proc + "/gid_map").c_str(), std::to_string(gid) + " " + std::to_string(gid) + " 1\n");
  }
  if (write(mapped[1], ok ? "m" : "x", 1) != 1) ok = false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ok) return 125;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool load(scmp_filter_ctx ctx) {
  int rc = ctx == nullptr ? -ENOMEM : seccomp_load(ctx);
  if (rc != 0) std::fprintf(stderr, "doctor-under: seccomp_load: %s\n", std::strerror(-rc));
  seccomp_release(ctx);
  return rc == 0;
}

bool hide_landlock() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx != nullptr &&
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(landlock_create_ruleset), 0) != 0)
    return false;
  return load(ctx);
}

bool hide_seccomp() {
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
  if (ctx == nullptr || seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(seccomp), 0) != 0 ||
      seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EINVAL), SCMP_SYS(prctl), 1,
                       SCMP_A0(SCMP_CMP_EQ, PR_SET_SECCOMP)) != 0)
    return false;
  return load(ctx);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4 || std::strcmp(argv[2], "--") != 0) {
    std::fprintf(stderr,
                 "usage: doctor-under --no-user-namespaces|--hide-landlock|--hide-seccomp -- PROGRAM...\n");
    return 125;
  }
  const std::string mode = argv[1];
  bool taken = false;
  if (mode == "--no-user-namespaces") return no_user_namespaces(argv + 3);
  if (mode == "--hide-landlock")
    taken = hide_landlock();
  else if (mode == "--hide-seccomp")
    taken = hide_seccomp();
  else
    std::fprintf(stderr, "doctor-under: unknown mode %s\n", mode.c_str());
  if (!taken) return 125;
  execv(argv[3], argv + 3);
  std::fprintf(stderr, "doctor-under: exec %s: %s\n", argv[3], std::strerror(errno));
  return 127;
}
