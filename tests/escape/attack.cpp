// The attack program: one escape attempt per case, chosen by argv[1], run
// inside a sandbox by the escape suite.
//
// It prints one line, "attack CASE: ok" or "attack CASE: ERRNAME", and exits
// with 0 when the call worked and with the errno when it failed, so the suite
// can assert *how* it was stopped. A call the filter kills never returns: the
// caller sees SIGSYS (128+31).
#include <fcntl.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string_view>

#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr 467
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

extern char** environ;

namespace {

const char* g_self = nullptr;  // argv[0], the path this program was started by

// 0 when rc says success, else errno.
int answer(long rc) {
  return rc >= 0 ? 0 : errno;
}

// The 31 killed calls, each with arguments that do nothing harmful if the
// filter is missing (removing the defence must not reboot the test machine).
int call_unshare() {
  return answer(syscall(SYS_unshare, 0));
}
int call_setns() {
  return answer(syscall(SYS_setns, -1, 0));
}
int call_mount() {
  return answer(syscall(SYS_mount, nullptr, nullptr, nullptr, 0, nullptr));
}
int call_umount2() {
  return answer(syscall(SYS_umount2, nullptr, 0));
}
int call_move_mount() {
  return answer(syscall(SYS_move_mount, -1, nullptr, -1, nullptr, 0));
}
int call_open_tree() {
  return answer(syscall(SYS_open_tree, -1, nullptr, 0));
}
int call_fsopen() {
  return answer(syscall(SYS_fsopen, nullptr, 0));
}
int call_fsconfig() {
  return answer(syscall(SYS_fsconfig, -1, 0, nullptr, nullptr, 0));
}
int call_fsmount() {
  return answer(syscall(SYS_fsmount, -1, 0, 0));
}
int call_fspick() {
  return answer(syscall(SYS_fspick, -1, nullptr, 0));
}
int call_mount_setattr() {
  return answer(syscall(SYS_mount_setattr, -1, nullptr, 0, nullptr, 0));
}
int call_open_tree_attr() {
  return answer(syscall(SYS_open_tree_attr, -1, nullptr, 0, nullptr, 0));
}
int call_pivot_root() {
  return answer(syscall(SYS_pivot_root, nullptr, nullptr));
}
int call_chroot() {
  return answer(syscall(SYS_chroot, nullptr));
}
int call_init_module() {
  return answer(syscall(SYS_init_module, nullptr, 0, nullptr));
}
int call_finit_module() {
  return answer(syscall(SYS_finit_module, -1, nullptr, 0));
}
int call_delete_module() {
  return answer(syscall(SYS_delete_module, nullptr, 0));
}
int call_kexec_load() {
  return answer(syscall(SYS_kexec_load, 0, 0, nullptr, 0xffffffffUL));
}
int call_kexec_file_load() {
  return answer(syscall(SYS_kexec_file_load, -1, -1, 0, nullptr, 0xffffffffUL));
}
int call_add_key() {
  return answer(syscall(SYS_add_key, nullptr, nullptr, nullptr, 0, 0));
}
int call_keyctl() {
  return answer(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0));
}
int call_request_key() {
  return answer(syscall(SYS_request_key, nullptr, nullptr, nullptr, 0));
}
int call_ptrace() {
  return answer(syscall(SYS_ptrace, -1L, 0, 0, 0));
}
int call_process_vm_readv() {
  return answer(syscall(SYS_process_vm_readv, getpid(), nullptr, 0, nullptr, 0, 0));
}
int call_process_vm_writev() {
  return answer(syscall(SYS_process_vm_writev, getpid(), nullptr, 0, nullptr, 0, 0));
}
int call_bpf() {
  return answer(syscall(SYS_bpf, -1, nullptr, 0));
}
int call_userfaultfd() {
  return answer(syscall(SYS_userfaultfd, ~0U));
}
int call_reboot() {
  return answer(syscall(SYS_reboot, 0, 0, 0, nullptr));
}
int call_syslog() {
  return answer(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0));
}
int call_sethostname() {
  return answer(syscall(SYS_sethostname, "x", -1));
}
int call_open_by_handle_at() {
  return answer(syscall(SYS_open_by_handle_at, -1, nullptr, 0));
}

// The x32 ABI's getpid: harmless, but no x32 call may pass.
int call_x32_getpid() {
  return answer(syscall(0x40000000L | SYS_getpid));
}
// i386's getpid through int 0x80: a foreign architecture. The kernel ends a
// process with SIGSEGV here when it has no IA32 emulation.
int call_i386_getpid() {
  long rc = 20;
  __asm__ volatile("int $0x80" : "+a"(rc) : : "memory");
  return rc >= 0 ? 0 : static_cast<int>(-rc);
}

int call_exit_zero() {
  return 0;
}

// A file with no path at all, run by descriptor: this program, opened.
int call_execveat_empty_path() {
  int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0) return errno;
  char arg0[] = "attack", arg1[] = "exit_zero";
  char* argv[] = {arg0, arg1, nullptr};
  return answer(syscall(SYS_execveat, self, "", argv, environ, AT_EMPTY_PATH));
}

// A memfd holding a copy of this program, or -1 with errno.
constexpr unsigned kMfdNoexecSeal = 0x0008U, kMfdExec = 0x0010U;
int memfd_copy_of_self(unsigned flags) {
  int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0) return -1;
  int mem = static_cast<int>(syscall(SYS_memfd_create, "attack", flags));
  char buf[65536];
  for (ssize_t n; mem >= 0 && (n = read(self, buf, sizeof buf)) > 0;) {
    if (write(mem, buf, static_cast<size_t>(n)) != n) return -1;
  }
  int saved = errno;
  close(self);
  errno = saved;
  return mem;
}
// Run it through its /proc/self/fd link: Landlock has no path to check.
int call_memfd_exec_proc_fd() {
  int mem = memfd_copy_of_self(0);
  if (mem < 0) return errno;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/fd/%d", mem);
  char arg0[] = "attack", arg1[] = "exit_zero";
  char* argv[] = {arg0, arg1, nullptr};
  return answer(execve(path, argv, environ));
}
// Or by descriptor.
int call_memfd_execveat() {
  int mem = memfd_copy_of_self(MFD_CLOEXEC);
  if (mem < 0) return errno;
  char arg0[] = "attack", arg1[] = "exit_zero";
  char* argv[] = {arg0, arg1, nullptr};
  return answer(syscall(SYS_execveat, mem, "", argv, environ, AT_EMPTY_PATH));
}
// Asking for an executable memfd by name.
int call_memfd_exec_flag() {
  return answer(syscall(SYS_memfd_create, "attack", MFD_CLOEXEC | kMfdExec));
}
// A malformed call answered as the kernel answers it: unknown flag bits are
// EINVAL, whatever else is set (Chromium probes with every bit set and
// accepts only EINVAL, ENOSYS or EPERM).
int call_memfd_unknown_flags() {
  return answer(syscall(SYS_memfd_create, "attack", ~0U));
}
// MFD_EXEC with MFD_NOEXEC_SEAL contradicts itself: EINVAL, as the kernel says.
int call_memfd_exec_and_seal() {
  return answer(syscall(SYS_memfd_create, "attack", kMfdExec | kMfdNoexecSeal));
}
// Making one executable afterwards.
int call_memfd_chmod_exec() {
  int mem = static_cast<int>(syscall(SYS_memfd_create, "attack", MFD_CLOEXEC));
  if (mem < 0) return errno;
  return answer(fchmod(mem, 0755));
}
// The neighbour: a memfd used as a file works, sealing included (Wayland,
// systemd and Chromium seal theirs).
int call_memfd_as_file() {
  int mem = static_cast<int>(syscall(SYS_memfd_create, "attack", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (mem < 0) return errno;
  const char text[] = "a memfd used as a file";
  if (write(mem, text, sizeof text) != static_cast<ssize_t>(sizeof text)) return errno;
  char back[sizeof text] = {};
  if (pread(mem, back, sizeof back, 0) != static_cast<ssize_t>(sizeof back)) return errno;
  if (std::memcmp(back, text, sizeof text) != 0) return EIO;
  void* shared = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0);
  if (shared == MAP_FAILED) return errno;
  if (std::memcmp(shared, text, sizeof text) != 0) return EIO;
  static_cast<char*>(shared)[0] = 'A';
  munmap(shared, 4096);
  if (fcntl(mem, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0) return errno;
  if (write(mem, "x", 1) >= 0 || errno != EPERM) return EIO;  // the seal holds
  return 0;
}
// A memfd that asked to be non-executable itself: the filter lets it by.
int call_memfd_create_sealed() {
  return answer(syscall(SYS_memfd_create, "attack", MFD_CLOEXEC | kMfdNoexecSeal));
}
// The neighbour: execveat of a path, relative to a directory descriptor.
int call_execveat_path() {
  std::string_view self = g_self;
  const auto slash = self.rfind('/');
  if (slash == std::string_view::npos) return ENOENT;
  char dir[4096];
  std::snprintf(dir, sizeof dir, "%.*s", static_cast<int>(slash), self.data());
  int dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dirfd < 0) return errno;
  char arg0[] = "attack", arg1[] = "exit_zero";
  char* argv[] = {arg0, arg1, nullptr};
  return answer(syscall(SYS_execveat, dirfd, g_self + slash + 1, argv, environ, 0));
}
int call_memfd_create() {
  return answer(syscall(SYS_memfd_create, "attack", MFD_CLOEXEC));
}

int call_socket_vsock() {
  return answer(socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
}
// The kernel reads the domain as an int: the high half must not hide AF_VSOCK.
int call_socket_vsock_high_bits() {
  return answer(syscall(SYS_socket, (1UL << 32) | AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0));
}
int call_socket_unix() {
  return answer(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
}

int call_io_uring_setup() {
  io_uring_params params{};
  return answer(syscall(SYS_io_uring_setup, 4, &params));
}
int call_io_uring_enter() {
  return answer(syscall(SYS_io_uring_enter, -1, 1, 0, 0, nullptr, 0));
}
int call_io_uring_register() {
  return answer(syscall(SYS_io_uring_register, -1, 0, nullptr, 0));
}
// What libuv does: probe, be refused, carry on.
int call_io_uring_then_carry_on() {
  const int setup = call_io_uring_setup();
  const int enter = call_io_uring_enter();
  const int reg = call_io_uring_register();
  if (setup != EPERM || enter != EPERM || reg != EPERM) {
    std::printf("attack io_uring: setup %s, enter %s, register %s\n", strerrorname_np(setup),
                strerrorname_np(enter), strerrorname_np(reg));
    return 100;
  }
  std::printf("attack io_uring: refused with EPERM three times, carrying on\n");
  return 0;
}

constexpr std::size_t kPage = 4096;
void* map(int prot) {
  return mmap(nullptr, kPage, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

int call_mmap_rwx() {
  return map(PROT_READ | PROT_WRITE | PROT_EXEC) == MAP_FAILED ? errno : 0;
}
// The same, high bits set in prot, which the kernel ignores.
int call_mmap_rwx_high_bits() {
  return answer(syscall(SYS_mmap, nullptr, kPage, (1UL << 32) | PROT_READ | PROT_WRITE | PROT_EXEC,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
}
int call_mprotect_rw_to_rwx() {
  void* p = map(PROT_READ | PROT_WRITE);
  if (p == MAP_FAILED) return 200;
  return answer(mprotect(p, kPage, PROT_READ | PROT_WRITE | PROT_EXEC));
}
int call_pkey_mprotect_rwx() {
  void* p = map(PROT_READ | PROT_WRITE);
  if (p == MAP_FAILED) return 200;
  return answer(syscall(SYS_pkey_mprotect, p, kPage, PROT_READ | PROT_WRITE | PROT_EXEC, -1));
}
// Write code, then make it executable and not writable, then run it: how a
// JIT works under write-xor-execute.
int call_mmap_rw_then_rx() {
  void* p = map(PROT_READ | PROT_WRITE);
  if (p == MAP_FAILED) return errno;
  static_cast<unsigned char*>(p)[0] = 0xc3;  // ret
  if (mprotect(p, kPage, PROT_READ | PROT_EXEC) != 0) return errno;
  reinterpret_cast<void (*)()>(p)();
  return 0;
}
// Write and run code on a page that is writable and executable at once.
int call_rwx_page_runs() {
  void* p = map(PROT_READ | PROT_WRITE | PROT_EXEC);
  if (p == MAP_FAILED) return errno;
  static_cast<unsigned char*>(p)[0] = 0xc3;  // ret
  reinterpret_cast<void (*)()>(p)();
  return 0;
}

int call_personality_read_implies_exec() {
  return answer(syscall(SYS_personality, READ_IMPLIES_EXEC));
}
int call_personality_query() {
  return answer(syscall(SYS_personality, 0xffffffffUL));
}

int shmat_with(int flags) {
  int id = shmget(IPC_PRIVATE, kPage, IPC_CREAT | 0700);  // SHM_EXEC needs the x bit
  if (id < 0) return 200;
  void* p = shmat(id, nullptr, flags);
  const int result = reinterpret_cast<std::intptr_t>(p) == -1 ? errno : 0;
  shmctl(id, IPC_RMID, nullptr);
  return result;
}
int call_shmat_exec() {
  return shmat_with(SHM_EXEC);
}
int call_shmat_plain() {
  return shmat_with(0);
}

// Nested namespaces: each child, if the kernel makes one, exits at once.
int clone_with(unsigned long flags) {
  long pid = syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid == 0) _exit(0);
  if (pid < 0) return errno;
  waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return 0;
}
int clone3_with(std::uint64_t flags) {
  clone_args args{};
  args.flags = flags;
  args.exit_signal = SIGCHLD;
  long pid = syscall(SYS_clone3, &args, sizeof args);
  if (pid == 0) _exit(0);
  if (pid < 0) return errno;
  waitpid(static_cast<pid_t>(pid), nullptr, 0);
  return 0;
}
int call_clone_newuser() {
  return clone_with(CLONE_NEWUSER);
}
int call_clone_newuser_newnet() {
  return clone_with(CLONE_NEWUSER | CLONE_NEWNET);
}
int call_clone_newnet() {
  return clone_with(CLONE_NEWNET);
}
// A child the keeper could not trace.
int call_clone_untraced() {
  return clone_with(CLONE_UNTRACED);
}
int call_clone3_newuser() {
  return clone3_with(CLONE_NEWUSER);
}
int call_clone3_newuser_newnet() {
  return clone3_with(CLONE_NEWUSER | CLONE_NEWNET);
}
int call_unshare_newuser() {
  return answer(syscall(SYS_unshare, CLONE_NEWUSER));
}
int call_unshare_newuser_newnet() {
  return answer(syscall(SYS_unshare, CLONE_NEWUSER | CLONE_NEWNET));
}
// The neighbours: threads and posix_spawn, which glibc builds on clone and clone3.
int call_threads() {
  pthread_t threads[100];
  for (auto& t : threads)
    if (int rc = pthread_create(
            &t, nullptr, [](void*) -> void* { return nullptr; }, nullptr);
        rc != 0)
      return rc;
  for (auto& t : threads) pthread_join(t, nullptr);
  return 0;
}
int call_posix_spawn() {
  pid_t pid = 0;
  char* argv[] = {const_cast<char*>(g_self), const_cast<char*>("exit_zero"), nullptr};
  if (int rc = posix_spawn(&pid, g_self, nullptr, nullptr, argv, environ); rc != 0) return rc;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : ECHILD;
}

// Landlock cases: the path (or two) comes after the case name.
const char* g_path = nullptr;
const char* g_path2 = nullptr;
int call_create_file() {
  return answer(open(g_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
}
int call_read_file() {
  return answer(open(g_path, O_RDONLY | O_CLOEXEC));
}
int call_truncate() {
  return answer(truncate(g_path, 0));
}
int call_rename() {
  return answer(rename(g_path, g_path2));
}
int call_mknod_char() {
  return answer(mknod(g_path, S_IFCHR | 0600, makedev(1, 3)));
}
int call_mknod_fifo() {
  return answer(mknod(g_path, S_IFIFO | 0600, 0));
}

struct Case {
  const char* name;
  int (*run)();
  int paths = 0;
};

#define CASE(name) \
  { #name, call_##name }
const Case kCases[] = {
    CASE(unshare),
    CASE(setns),
    CASE(mount),
    CASE(umount2),
    CASE(move_mount),
    CASE(open_tree),
    CASE(fsopen),
    CASE(fsconfig),
    CASE(fsmount),
    CASE(fspick),
    CASE(mount_setattr),
    CASE(open_tree_attr),
    CASE(pivot_root),
    CASE(chroot),
    CASE(init_module),
    CASE(finit_module),
    CASE(delete_module),
    CASE(kexec_load),
    CASE(kexec_file_load),
    CASE(add_key),
    CASE(keyctl),
    CASE(request_key),
    CASE(ptrace),
    CASE(process_vm_readv),
    CASE(process_vm_writev),
    CASE(bpf),
    CASE(userfaultfd),
    CASE(reboot),
    CASE(syslog),
    CASE(sethostname),
    CASE(open_by_handle_at),
    CASE(x32_getpid),
    CASE(i386_getpid),
    CASE(exit_zero),
    CASE(execveat_empty_path),
    CASE(execveat_path),
    CASE(memfd_create),
    CASE(memfd_exec_proc_fd),
    CASE(memfd_execveat),
    CASE(memfd_exec_flag),
    CASE(memfd_unknown_flags),
    CASE(memfd_exec_and_seal),
    CASE(memfd_chmod_exec),
    CASE(memfd_as_file),
    CASE(memfd_create_sealed),
    CASE(socket_vsock),
    CASE(socket_vsock_high_bits),
    CASE(socket_unix),
    CASE(io_uring_setup),
    CASE(io_uring_enter),
    CASE(io_uring_register),
    CASE(io_uring_then_carry_on),
    CASE(mmap_rwx),
    CASE(mmap_rwx_high_bits),
    CASE(mprotect_rw_to_rwx),
    CASE(pkey_mprotect_rwx),
    CASE(mmap_rw_then_rx),
    CASE(rwx_page_runs),
    CASE(personality_read_implies_exec),
    CASE(personality_query),
    CASE(shmat_exec),
    CASE(shmat_plain),
    CASE(clone_newuser),
    CASE(clone_newuser_newnet),
    CASE(clone_newnet),
    CASE(clone_untraced),
    CASE(clone3_newuser),
    CASE(clone3_newuser_newnet),
    CASE(unshare_newuser),
    CASE(unshare_newuser_newnet),
    CASE(threads),
    CASE(posix_spawn),
    {"create_file", call_create_file, 1},
    {"read_file", call_read_file, 1},
    {"truncate", call_truncate, 1},
    {"rename", call_rename, 2},
    {"mknod_char", call_mknod_char, 1},
    {"mknod_fifo", call_mknod_fifo, 1},
};
#undef CASE

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: attack CASE [PATH [PATH]]\n");
    return 64;
  }
  g_self = argv[0];
  for (const Case& c : kCases) {
    if (std::strcmp(c.name, argv[1]) != 0) continue;
    if (argc != 2 + c.paths) {
      std::fprintf(stderr, "attack: case '%s' takes %d path(s)\n", c.name, c.paths);
      return 64;
    }
    g_path = c.paths > 0 ? argv[2] : nullptr;
    g_path2 = c.paths > 1 ? argv[3] : nullptr;
    const int result = c.run();
    const char* name = result == 0 ? "ok" : strerrorname_np(result);
    std::printf("attack %s: %s\n", c.name, name != nullptr ? name : "failed");
    return result;
  }
  std::fprintf(stderr, "attack: no case named '%s'\n", argv[1]);
  return 64;
}
