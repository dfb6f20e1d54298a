// One descriptor passed with a message (SCM_RIGHTS), as the report channel,
// the relay's broker and chock-connect each do. Header-only and free of
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

}  // namespace chock
