#include "sandbox/filtered_setup.hpp"

#include <linux/netlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace chock::sandbox {

namespace {

bool fail(StepFailure* failure, Step step, int error) noexcept {
  *failure = {step, error, -1};
  return false;
}

// Sends one batch and reads the kernel's answers until each message is
// acknowledged; the first error is the result (errno), 0 on success.
int send_netlink(int protocol, const net::NetlinkBatch& batch) noexcept {
  int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, protocol);
  if (s < 0) return errno;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  int error = 0;
  if (sendto(s, batch.bytes.data(), batch.bytes.size(), 0, reinterpret_cast<sockaddr*>(&kernel),
             sizeof kernel) < 0)
    error = errno;
  int acks = batch.acks;
  alignas(nlmsghdr) char buffer[8192];
  while (error == 0 && acks > 0) {
    ssize_t n = recv(s, buffer, sizeof buffer, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      error = errno;
      break;
    }
    auto left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buffer); NLMSG_OK(h, static_cast<unsigned>(left));
         h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type != NLMSG_ERROR) continue;
      const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
      if (e->error != 0) {
        error = -e->error;
        break;
      }
      --acks;
    }
  }
  close(s);
  return error;
}

int bound_socket(int family, int type, const void* address, socklen_t size) noexcept {
  int s = socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0) return -1;
  const int one = 1;
  if (family == AF_INET6) setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (bind(s, static_cast<const sockaddr*>(address), size) != 0 ||
      (type == SOCK_STREAM && listen(s, 1024) != 0)) {
    const int err = errno;
    close(s);
    errno = err;
    return -1;
  }
  return s;
}

void hand_over(int channel, int fd, NetSocket which) noexcept {
  Record r;
  r.kind = Record::net_socket;
  r.detail = which;
  send_record(channel, r, fd);
  close(fd);
}

}  // namespace

bool set_up_filtered_network(const FilteredPlan& plan, int channel, StepFailure* failure) noexcept {
  if (int e = send_netlink(NETLINK_ROUTE, *plan.routes); e != 0) return fail(failure, Step::net_routes, e);
  if (int e = send_netlink(NETLINK_NETFILTER, *plan.ruleset); e != 0)
    return fail(failure, Step::net_ruleset, e);

  sockaddr_in relay4{};
  relay4.sin_family = AF_INET;
  relay4.sin_port = htons(net::kRelayPort);
  relay4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  sockaddr_in6 relay6{};
  relay6.sin6_family = AF_INET6;
  relay6.sin6_port = htons(net::kRelayPort);
  relay6.sin6_addr = in6addr_loopback;
  sockaddr_in stub{};
  stub.sin_family = AF_INET;
  stub.sin_port = htons(net::kStubPort);
  std::memcpy(&stub.sin_addr, net::kStubAddress, 4);

  int r4 = bound_socket(AF_INET, SOCK_STREAM, &relay4, sizeof relay4);
  if (r4 < 0) return fail(failure, Step::net_sockets, errno);
  // A kernel without IPv6 has no ::1: the relay serves IPv4 alone.
  int r6 = bound_socket(AF_INET6, SOCK_STREAM, &relay6, sizeof relay6);
  if (r6 < 0 && errno != EAFNOSUPPORT && errno != EADDRNOTAVAIL) {
    const int err = errno;
    close(r4);
    return fail(failure, Step::net_sockets, err);
  }
  int st = bound_socket(AF_INET, SOCK_DGRAM, &stub, sizeof stub);
  if (st < 0) {
    const int err = errno;
    close(r4);
    if (r6 >= 0) close(r6);
    return fail(failure, Step::net_sockets, err);
  }
  hand_over(channel, r4, kRelay4Socket);
  if (r6 >= 0) hand_over(channel, r6, kRelay6Socket);
  hand_over(channel, st, kStubSocket);  // last: the caller starts serving on it
  return true;
}

}  // namespace chock::sandbox
