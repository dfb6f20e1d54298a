// Name resolution with a deadline (chock/net.hpp). getaddrinfo(3) has none,
// so a name server that never answers would hold a fetch for as long as
// glibc's retries last; c-ares reads the same /etc/hosts and
// /etc/resolv.conf and is driven here by poll(2) against our own clock.
#include <ares.h>
#include <poll.h>

#include <cstring>
#include <mutex>

#include "chock/net.hpp"

namespace chock::net {

namespace {

struct Lookup {
  bool done = false;
  int status = ARES_SUCCESS;
  std::vector<sockaddr_storage> addresses;
};

void collect(void* arg, int status, int /*timeouts*/, ares_addrinfo* result) {
  auto* lookup = static_cast<Lookup*>(arg);
  lookup->done = true;
  lookup->status = status;
  if (result == nullptr) return;
  for (const ares_addrinfo_node* n = result->nodes; n != nullptr; n = n->ai_next) {
    if (n->ai_addr == nullptr || (n->ai_family != AF_INET && n->ai_family != AF_INET6)) continue;
    if (n->ai_addrlen > sizeof(sockaddr_storage)) continue;
    sockaddr_storage a{};
    std::memcpy(&a, n->ai_addr, n->ai_addrlen);
    bool seen = false;
    for (const auto& b : lookup->addresses)
      seen = seen || (a.ss_family == b.ss_family && address_text(a) == address_text(b));
    if (!seen) lookup->addresses.push_back(a);
  }
  ares_freeaddrinfo(result);
}

class Channel {
 public:
  Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;
  ~Channel() {
    if (channel_ != nullptr) ares_destroy(channel_);
  }
  ares_channel* out() { return &channel_; }
  ares_channel get() { return channel_; }

 private:
  ares_channel channel_ = nullptr;
};

}  // namespace

Expected<std::vector<sockaddr_storage>> resolve(const Host& host, std::chrono::milliseconds deadline,
                                                int cancel_fd) {
  if (host.kind != Host::Kind::name) return std::vector<sockaddr_storage>{host.address};
  static std::once_flag once;
  static int library = ARES_SUCCESS;
  std::call_once(once, [] { library = ares_library_init(ARES_LIB_INIT_ALL); });
  if (library != ARES_SUCCESS) return Error{"start the resolver (c-ares)", ares_strerror(library)};

  Channel channel;
  ares_options options{};
  // Each server gets a second of the deadline at most, so a dead first
  // server leaves time for the next.
  options.timeout = static_cast<int>(std::min<std::int64_t>(deadline.count(), 1000));
  options.tries = 2;
  if (int r = ares_init_options(channel.out(), &options, ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
      r != ARES_SUCCESS)
    return Error{"start the resolver (c-ares)", ares_strerror(r)};

  Lookup lookup;
  ares_addrinfo_hints hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  ares_getaddrinfo(channel.get(), host.text.c_str(), nullptr, &hints, collect, &lookup);
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!lookup.done) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ares_cancel(channel.get());  // calls collect with ARES_ECANCELLED
      return Error{"resolve " + host.text, "no answer within " + std::to_string(deadline.count()) + " ms"};
    }
    ares_socket_t sockets[ARES_GETSOCK_MAXNUM];
    const int bits = ares_getsock(channel.get(), sockets, ARES_GETSOCK_MAXNUM);
    pollfd fds[ARES_GETSOCK_MAXNUM + 1];
    nfds_t count = 0;
    for (int i = 0; i < ARES_GETSOCK_MAXNUM; ++i) {
      short events = 0;
      if (ARES_GETSOCK_READABLE(bits, i)) events |= POLLIN;
      if (ARES_GETSOCK_WRITABLE(bits, i)) events |= POLLOUT;
      if (events != 0) fds[count++] = pollfd{sockets[i], events, 0};
    }
    timeval max{left.count() / 1000, static_cast<suseconds_t>(left.count() % 1000 * 1000)};
    timeval tv{};
    const timeval* wait = ares_timeout(channel.get(), &max, &tv);
    const int ms = static_cast<int>(wait->tv_sec * 1000 + wait->tv_usec / 1000);
    fds[count] = pollfd{cancel_fd, POLLIN, 0};  // a negative fd is ignored by poll
    if (::poll(fds, count + 1, ms) < 0 && errno != EINTR) return sys_error("resolve " + host.text + ": poll");
    if (fds[count].revents != 0) {
      ares_cancel(channel.get());
      return Error{"resolve " + host.text, "cancelled: the call ended", ECANCELED};
    }
    bool any = false;
    for (nfds_t i = 0; i < count; ++i) {
      if (fds[i].revents == 0) continue;
      any = true;
      const bool in = (fds[i].revents & (POLLIN | POLLERR | POLLHUP)) != 0;
      const bool out = (fds[i].revents & POLLOUT) != 0;
      ares_process_fd(channel.get(), in ? fds[i].fd : ARES_SOCKET_BAD, out ? fds[i].fd : ARES_SOCKET_BAD);
    }
    if (!any) ares_process_fd(channel.get(), ARES_SOCKET_BAD, ARES_SOCKET_BAD);  // timeouts and retries
  }
  if (lookup.status == ARES_ENOTFOUND || lookup.status == ARES_ENODATA)
    return Error{"resolve " + host.text, "no such name, or no address for it"};
  if (lookup.status != ARES_SUCCESS) return Error{"resolve " + host.text, ares_strerror(lookup.status)};
  if (lookup.addresses.empty()) return Error{"resolve " + host.text, "no address for it"};
  return std::move(lookup.addresses);
}

}  // namespace chock::net
