// Descriptors passed with a message (SCM_RIGHTS): one, as the report
// channel, the relay's broker and chock-connect each pass; a few, as an
// overlay holder hands over a session's mounts. Header-only and free of
// allocation: the sandbox's processes use it after fork, and chock-connect
// links nothing of libchock.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace chock {

// Most descriptors one message here carries (a session's held overlays,
// handed over together).
inline constexpr int kMaxPassedFds = 4;

// Room for a control message of up to N descriptors.
template <int N>
struct FdRoom {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int) * N)] = {};
};
using FdControl = FdRoom<1>;
using FdsControl = FdRoom<kMaxPassedFds>;

// `msg` (its iov already set) carries `fds[0..n)` (n at most N), in `control`.
template <int N>
inline void attach_fds(msghdr& msg, FdRoom<N>& control, const int* fds, int n) noexcept {
  const auto size = sizeof(int) * static_cast<unsigned>(n);
  msg.msg_control = control.bytes;
  msg.msg_controllen = CMSG_SPACE(size);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(size);
  std::memcpy(CMSG_DATA(c), fds, size);
}

inline void attach_fd(msghdr& msg, FdControl& control, int fd) noexcept {
  attach_fds(msg, control, &fd, 1);
}

// Makes `msg` ready to receive up to N descriptors into `control`.
template <int N>
inline void expect_fds(msghdr& msg, FdRoom<N>& control) noexcept {
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
}

inline void expect_fd(msghdr& msg, FdControl& control) noexcept {
  expect_fds(msg, control);
}

// The descriptors a received message carried, into `out` (room for
// kMaxPassedFds); how many.
inline int received_fds(msghdr& msg, int* out) noexcept {
  int n = 0;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const auto count = static_cast<int>((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    for (int i = 0; i < count && n < kMaxPassedFds; ++i)
      std::memcpy(&out[n++], CMSG_DATA(c) + sizeof(int) * static_cast<unsigned>(i), sizeof(int));
  }
  return n;
}

// The descriptor a received message carried (its first), or -1.
inline int received_fd(msghdr& msg) noexcept {
  int fds[kMaxPassedFds];
  return received_fds(msg, fds) > 0 ? fds[0] : -1;
}

// Closes every descriptor a received message carried: what a call sends is
// never kept.
inline void close_received_fds(msghdr& msg) noexcept {
  int fds[kMaxPassedFds];
  const int n = received_fds(msg, fds);
  for (int i = 0; i < n; ++i) ::close(fds[i]);
}

// SO_PASSRIGHTS (Linux 6.16; asm-generic's number, which x86-64 and arm64
// use): off, a sendmsg with SCM_RIGHTS to this socket fails with EPERM, so
// nothing a call sends can sit in a socket of Chock's.
inline constexpr int kSoPassRights = 83;

// Refuses descriptors sent to `fd`; false where the kernel has no such
// option, and what arrives must be closed by close_received_fds.
inline bool refuse_passed_fds(int fd) noexcept {
#if defined(__x86_64__) || defined(__aarch64__)
  const int off = 0;
  return ::setsockopt(fd, SOL_SOCKET, kSoPassRights, &off, sizeof off) == 0;
#else
  (void)fd;
  return false;
#endif
}

}  // namespace chock
