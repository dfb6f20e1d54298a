// chock-connect HOST PORT: inside a filtered call, asks Chock's broker (the
// SOCK_SEQPACKET descriptor named by CHOCK_BROKER_FD) for a stream to
// HOST:PORT and joins it to stdin and stdout, so that `ssh -o
// ProxyCommand='chock-connect %h %p'` and other clients that know nothing of
// Chock can reach a host the policy allows. Exit status: 0 the stream ended,
// 1 refused, 2 bad usage, 3 the stream failed.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "util/fd_passing.hpp"

namespace {

int fail(const char* what, int status) {
  std::fprintf(stderr, "chock-connect: %s\n", what);
  return status;
}

// Copies what `from` has into `to`; false at EOF or an error.
bool move_some(int from, int to) {
  char buf[65536];
  ssize_t n = read(from, buf, sizeof buf);
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) return false;
  for (ssize_t done = 0; done < n;) {
    ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += w;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return fail("usage: chock-connect HOST PORT", 2);
  const char* fd_text = std::getenv("CHOCK_BROKER_FD");
  if (fd_text == nullptr) return fail("CHOCK_BROKER_FD is not set: run inside a call with --net filtered", 2);
  char* end = nullptr;
  const long broker = std::strtol(fd_text, &end, 10);
  if (end == fd_text || *end != '\0' || broker < 0 || broker > 65535)
    return fail("CHOCK_BROKER_FD is not a descriptor", 2);
  const std::string request = std::string(argv[1]) + ":" + argv[2];
  if (request.size() > 290) return fail("the host name is too long", 2);
  if (send(static_cast<int>(broker), request.data(), request.size(), MSG_NOSIGNAL) < 0)
    return fail("the broker is not there (CHOCK_BROKER_FD is closed)", 3);

  char answer[16] = {};
  iovec iov{answer, sizeof answer - 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  chock::FdControl control;
  chock::expect_fd(msg, control);
  const ssize_t n = recvmsg(static_cast<int>(broker), &msg, MSG_CMSG_CLOEXEC);
  // Chock closes the broker of a call that asked without reading its answers.
  if (n <= 0) return fail("the broker has closed (Chock says why on its stderr)", 3);
  const int stream = chock::received_fd(msg);
  if (stream < 0 || std::strncmp(answer, "ok", 2) != 0) {
    std::fprintf(stderr, "chock-connect: %s refused by the policy\n", request.c_str());
    return 1;
  }
  // Both ways until both have ended; the stream's write side is shut when
  // stdin ends, so the server sees the request is complete.
  bool in_open = true, out_open = true;
  while (out_open) {
    pollfd fds[2] = {{in_open ? 0 : -1, POLLIN, 0}, {stream, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return fail(std::strerror(errno), 3);
    }
    if (fds[0].revents != 0 && !move_some(0, stream)) {
      in_open = false;
      shutdown(stream, SHUT_WR);
    }
    if (fds[1].revents != 0 && !move_some(stream, 1)) out_open = false;
  }
  return 0;
}
