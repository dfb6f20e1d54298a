// net-hostile MODE [N]: what a hostile program in a filtered call does to
// Chock's host side (issue 53), one attack a mode. Each prints what the
// kernel and the host side answered, so a test can tell how it was stopped.
//
//   broker-flood       sends its own broker socket into the broker
//                      (SCM_RIGHTS), floods the broker with bad requests
//                      without reading the answers until the broker is
//                      closed or stops answering (stuck in its send), then
//                      sends itself again
//   unread-streams N [MS]  N connections through the relay and one through
//                      the broker, each asking for a large answer and closed
//                      without reading it; then MS (300) to live, while
//                      Chock's writes meet the closed sockets
//   name-flood N       N made-up names asked of the call's resolver, then
//                      the first again
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "util/fd_passing.hpp"

namespace {

const char* result_of(long r) {
  if (r >= 0) return "ok";
  const char* name = strerrorname_np(errno);
  return name != nullptr ? name : "failed";
}

int broker_fd() {
  const char* text = std::getenv("CHOCK_BROKER_FD");
  return text != nullptr ? std::atoi(text) : -1;
}

// The broker's own descriptor, into itself.
const char* send_itself(int broker) {
  char byte = 'x';
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  chock::FdControl control;
  chock::attach_fd(msg, control, broker);
  return result_of(sendmsg(broker, &msg, MSG_DONTWAIT | MSG_NOSIGNAL));
}

int unread_bytes(int fd) {
  int n = 0;
  ioctl(fd, FIONREAD, &n);  // a SOCK_SEQPACKET socket: every message queued
  return n;
}

int broker_flood() {
  const int broker = broker_fd();
  if (broker < 0) return 2;
  std::printf("first-selfsend %s\n", send_itself(broker));
  // Until an error. A host side that blocked sending an answer answers no
  // more: after 100 requests in a row that added no answer here, and no
  // answer or hang-up of the broker within 2 s, it is stuck, and the
  // requests so far leave room for the self-send below.
  const char* why = "done";
  int unread = unread_bytes(broker);
  int unanswered = 0;
  for (int i = 0; i < 100000; ++i) {
    if (send(broker, "nonsense", 8, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
      why = result_of(-1);
      break;
    }
    int now = unread_bytes(broker);
    if (now == unread) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      now = unread_bytes(broker);
    }
    unanswered = now > unread ? 0 : unanswered + 1;
    unread = now;
    if (unanswered < 100) continue;
    bool moved = false;
    for (int wait = 0; wait < 200 && !moved; ++wait) {
      pollfd hung{broker, POLLRDHUP, 0};
      moved = poll(&hung, 1, 10) > 0 || unread_bytes(broker) != unread;
    }
    if (!moved) {
      why = "host-stuck";
      break;
    }
    unread = unread_bytes(broker);
    unanswered = 0;
  }
  std::printf("flood %s\n", why);
  std::printf("selfsend %s\n", send_itself(broker));
  return 0;
}

int connect_to(const char* host, const char* port) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host, port, &hints, &found) != 0) return -1;
  int s = -1;
  for (addrinfo* a = found; a != nullptr && s < 0; a = a->ai_next) {
    s = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (s >= 0 && connect(s, a->ai_addr, a->ai_addrlen) != 0) {
      close(s);
      s = -1;
    }
  }
  freeaddrinfo(found);
  return s;
}

// A stream from the broker, or -1.
int broker_stream(const char* target) {
  const int broker = broker_fd();
  if (broker < 0 || send(broker, target, std::strlen(target), MSG_NOSIGNAL) < 0) return -1;
  char answer[16] = {};
  iovec iov{answer, sizeof answer - 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  chock::FdControl control;
  chock::expect_fd(msg, control);
  if (recvmsg(broker, &msg, MSG_CMSG_CLOEXEC) <= 0) return -1;
  return chock::received_fd(msg);
}

constexpr char kAskForMuch[] = "GET /stream?n=50000000 HTTP/1.0\r\nHost: www.chock.test\r\n\r\n";

int unread_streams(int n, int linger_ms) {
  int asked = 0;
  for (int i = 0; i < n; ++i) {
    const int s = connect_to("www.chock.test", "80");
    if (s < 0) continue;
    if (send(s, kAskForMuch, sizeof kAskForMuch - 1, MSG_NOSIGNAL) > 0) ++asked;
    close(s);  // nothing read: what the relay writes next meets a closed socket
  }
  const int b = broker_stream("www.chock.test:80");
  if (b >= 0 && send(b, kAskForMuch, sizeof kAskForMuch - 1, MSG_NOSIGNAL) > 0) ++asked;
  if (b >= 0) close(b);
  // The answers arrive at the relay meanwhile, and it writes them on.
  std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
  std::printf("unread %d of %d\n", asked, n + 1);
  return 0;
}

std::string query(const std::string& name, unsigned id) {
  std::string q = {static_cast<char>(id >> 8), static_cast<char>(id), 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  std::size_t start = 0;
  while (start < name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    q.push_back(static_cast<char>(end - start));
    q.append(name, start, end - start);
    start = end + 1;
  }
  q.append({0, 0, 1, 0, 1});  // A, IN
  return q;
}

// The answer's rcode, or -1 when none came.
int ask(int s, const std::string& name, unsigned id) {
  const std::string q = query(name, id);
  if (send(s, q.data(), q.size(), 0) < 0) return -1;
  unsigned char answer[512];
  const ssize_t n = recv(s, answer, sizeof answer, 0);
  return n >= 12 ? answer[3] & 0xf : -1;
}

int name_flood(int n) {
  const int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in stub{};
  stub.sin_family = AF_INET;
  stub.sin_port = htons(53);
  stub.sin_addr.s_addr = htonl(0x7f000035);  // 127.0.0.53
  timeval tv{2, 0};
  setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (s < 0 || connect(s, reinterpret_cast<sockaddr*>(&stub), sizeof stub) != 0) return 2;
  int noerror = 0, refused = 0, other = 0;
  for (int i = 0; i < n; ++i) {
    const int rcode = ask(s, "n" + std::to_string(i) + ".flood.chock.test", static_cast<unsigned>(i));
    (rcode == 0 ? noerror : rcode == 5 ? refused : other) += 1;
  }
  std::printf("names noerror=%d refused=%d other=%d\n", noerror, refused, other);
  std::printf("first-again rcode=%d\n", ask(s, "n0.flood.chock.test", 1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  const std::string mode = argv[1];
  const int n = argc > 2 ? std::atoi(argv[2]) : 0;
  int status = 64;
  if (mode == "broker-flood") status = broker_flood();
  if (mode == "unread-streams") status = unread_streams(n, argc > 3 ? std::atoi(argv[3]) : 300);
  if (mode == "name-flood") status = name_flood(n);
  std::fflush(stdout);
  return status;
}
