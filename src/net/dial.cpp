// Dialling an address the judge checked (chock/net.hpp): a non-blocking
// connect with a deadline of our own, never a name, so nothing can look the
// host up a second time.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "chock/net.hpp"

namespace chock::net {

Expected<int> dial(const sockaddr_storage& address, std::uint16_t port, std::chrono::milliseconds deadline,
                   int cancel_fd) {
  sockaddr_storage to = address;
  socklen_t length = 0;
  if (to.ss_family == AF_INET) {
    reinterpret_cast<sockaddr_in*>(&to)->sin_port = htons(port);
    length = sizeof(sockaddr_in);
  } else if (to.ss_family == AF_INET6) {
    reinterpret_cast<sockaddr_in6*>(&to)->sin6_port = htons(port);
    length = sizeof(sockaddr_in6);
  } else {
    return Error{"connect", "not an IPv4 or IPv6 address"};
  }
  const std::string where = (to.ss_family == AF_INET6 ? "[" + address_text(to) + "]" : address_text(to)) +
                            ":" + std::to_string(port);
  const int fd = ::socket(to.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return sys_error("connect: socket", where);
  auto fail = [&](const char* what, int code) {
    ::close(fd);
    return Error{what, where, code};
  };
  if (::connect(fd, reinterpret_cast<const sockaddr*>(&to), length) != 0) {
    if (errno != EINPROGRESS) return fail("connect", errno);
    pollfd p[2] = {{fd, POLLOUT, 0}, {cancel_fd, POLLIN, 0}};
    int r = 0;
    do {
      r = ::poll(p, 2, static_cast<int>(deadline.count()));
    } while (r < 0 && errno == EINTR);
    if (r == 0) return fail("connect: no answer within the deadline", ETIMEDOUT);
    if (r < 0) return fail("connect: poll", errno);
    if (p[1].revents != 0) return fail("connect: cancelled: the call ended", ECANCELED);
    int error = 0;
    socklen_t size = sizeof error;
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &size) != 0) return fail("connect", errno);
    if (error != 0) return fail("connect", error);
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) return fail("connect: fcntl", errno);
  return fd;
}

}  // namespace chock::net
