// Descriptors passed with a message (SCM_RIGHTS): one, as the report
// channel, the relay's broker and chock-connect each pass; a few, as an
// overlay holder hands over a session's mounts. Header-only and free of
// allocation: the sandbox's processes use it after fork, and chock-connect
// links nothing of libchock.
#pragma once

#include <sys/socket.h>

#include <cstring>

namespace chock {

// Room for the one descriptor's control message.
struct FdControl {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int))] = {};
};

// `msg` (its iov already set) carries `fd`, in `control`.
inline void attach_fd(msghdr& msg, FdControl& control, int fd) noexcept {
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
}

// Makes `msg` ready to receive one descriptor into `control`.
inline void expect_fd(msghdr& msg, FdControl& control) noexcept {
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
}

// The descriptor a received message carried, or -1.
inline int received_fd(msghdr& msg) noexcept {
  int fd = -1;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

// Room for a control message of up to kMaxPassedFds descriptors (a
// session's held overlays, handed over together).
inline constexpr int kMaxPassedFds = 4;
struct FdsControl {
  alignas(cmsghdr) char bytes[CMSG_SPACE(sizeof(int) * kMaxPassedFds)] = {};
};

// `msg` (its iov already set) carries `fds[0..n)` (n at most kMaxPassedFds), in `control`.
inline void attach_fds(msghdr& msg, FdsControl& control, const int* fds, int n) noexcept {
  const auto size = sizeof(int) * static_cast<unsigned>(n);
  msg.msg_control = control.bytes;
  msg.msg_controllen = CMSG_SPACE(size);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(size);
  std::memcpy(CMSG_DATA(c), fds, size);
}

// Makes `msg` ready to receive up to kMaxPassedFds descriptors into `control`.
inline void expect_fds(msghdr& msg, FdsControl& control) noexcept {
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof control.bytes;
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

}  // namespace chock
