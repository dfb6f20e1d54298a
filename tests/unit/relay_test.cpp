// The host side of a filtered call, without a namespace: the splice pump
// (both ways, half-close, every byte), the stub served from a thread, the
// broker's refusals, a link with no original destination, and the netlink
// messages the library carries being the ones libnftnl builds.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "net/filtered.hpp"
#include "net/relay.hpp"
#include "util/fd_passing.hpp"

namespace chock::net {
namespace {

std::string read_all(int fd) {
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<std::size_t>(n));
  return out;
}

void write_all(int fd, const std::string& bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    ASSERT_GT(n, 0);
    done += static_cast<std::size_t>(n);
  }
}

TEST(Pump, MovesEveryByteBothWaysAndPassesOnEachHalfClose) {
  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
  UniqueFd client(a[0]), relay_in(a[1]), relay_out(b[0]), server(b[1]);
  // The client's end blocks (the test reads and writes it plainly).
  ASSERT_EQ(fcntl(client.get(), F_SETFL, 0), 0);
  ASSERT_EQ(fcntl(relay_out.get(), F_SETFL, O_NONBLOCK), 0);
  UniqueFd stop(eventfd(0, EFD_CLOEXEC));
  Pumped moved;
  std::thread pumping([&] { moved = pump(relay_in.get(), relay_out.get(), stop.get()); });
  std::string request;
  for (int i = 0; request.size() < (8U << 20); ++i) request += std::to_string(i) + ",";
  std::thread sending([&] {
    write_all(client.get(), request);
    shutdown(client.get(), SHUT_WR);  // the server must see the end of the request
  });
  EXPECT_EQ(read_all(server.get()), request);
  sending.join();
  write_all(server.get(), "the reply");
  shutdown(server.get(), SHUT_WR);
  EXPECT_EQ(read_all(client.get()), "the reply");
  pumping.join();
  EXPECT_EQ(moved.a_to_b, request.size());
  EXPECT_EQ(moved.b_to_a, 9U);
}

TEST(Pump, EndsWhenTheRelayStops) {
  int a[2], b[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, a), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, b), 0);
  UniqueFd a0(a[0]), a1(a[1]), b0(b[0]), b1(b[1]);
  UniqueFd stop(eventfd(0, EFD_CLOEXEC));
  std::thread pumping([&] { pump(a1.get(), b0.get(), stop.get()); });
  const std::uint64_t one = 1;
  ASSERT_EQ(write(stop.get(), &one, sizeof one), 8);
  pumping.join();  // an idle link does not outlive its call
}

std::vector<std::uint8_t> query(const std::string& name) {
  std::vector<std::uint8_t> m = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
  std::size_t start = 0;
  while (start < name.size()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    m.push_back(static_cast<std::uint8_t>(end - start));
    m.insert(m.end(), name.begin() + static_cast<long>(start), name.begin() + static_cast<long>(end));
    start = end + 1;
  }
  m.insert(m.end(), {0, 0, 1, 0, 1});  // A, IN
  return m;
}

class RelayOnLoopback : public ::testing::Test {
 protected:
  void SetUp() override {
    stub_.reset(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    listener_.reset(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(bind(stub_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(bind(listener_.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    ASSERT_EQ(listen(listener_.get(), 8), 0);
    socklen_t len = sizeof stub_address_;
    getsockname(stub_.get(), reinterpret_cast<sockaddr*>(&stub_address_), &len);
    len = sizeof relay_address_;
    getsockname(listener_.get(), reinterpret_cast<sockaddr*>(&relay_address_), &len);
    int pair[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    broker_inside_.reset(pair[1]);
    auto judge = std::make_shared<Judge>([](const std::string& action) {
      if (action.starts_with("net.connect.test.ok.") || action == "net.connect.localhost.80")
        return Ruling{true, "allow", "test rule", ""};
      return Ruling{false, "deny", "test rule", action + " is denied by the test rule"};
    });
    relay_ = std::make_unique<Relay>(
        judge, RelaySockets{std::move(stub_), std::move(listener_), UniqueFd(), UniqueFd(pair[0])});
  }

  std::vector<std::uint8_t> ask(const std::string& name) {
    UniqueFd s(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    timeval tv{5, 0};
    setsockopt(s.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const auto q = query(name);
    sendto(s.get(), q.data(), q.size(), 0, reinterpret_cast<sockaddr*>(&stub_address_), sizeof stub_address_);
    std::vector<std::uint8_t> answer(512);
    const ssize_t n = recv(s.get(), answer.data(), answer.size(), 0);
    answer.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return answer;
  }

  std::string broker(const std::string& request, int* fd) {
    send(broker_inside_.get(), request.data(), request.size(), 0);
    char answer[16] = {};
    iovec iov{answer, sizeof answer};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    FdControl control;
    expect_fd(msg, control);
    const ssize_t n = recvmsg(broker_inside_.get(), &msg, MSG_CMSG_CLOEXEC);
    *fd = received_fd(msg);
    if (*fd >= 0) ::close(*fd);
    return std::string(answer, n > 0 ? static_cast<std::size_t>(n) : 0);
  }

  UniqueFd stub_, listener_, broker_inside_;
  sockaddr_in stub_address_{}, relay_address_{};
  std::unique_ptr<Relay> relay_;
};

TEST_F(RelayOnLoopback, TheStubAnswersAnAllowedNameSyntheticallyAndRefusesTheRest) {
  auto ok = ask("www.ok.test");
  ASSERT_GE(ok.size(), 16U);
  EXPECT_EQ(ok[3] & 0xf, 0);  // NOERROR
  EXPECT_EQ(ok[ok.size() - 4], 198);
  EXPECT_EQ(ok[ok.size() - 3] & 0xfe, 18);  // 198.18.0.0/15
  auto no = ask("www.no.test");
  ASSERT_GE(no.size(), 12U);
  EXPECT_EQ(no[3] & 0xf, 5);  // REFUSED, never NXDOMAIN
  relay_->stop();
  const auto lines = relay_->refusals();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("refused www.no.test (net.connect.test.no.www.0 is denied by the test rule)"),
            std::string::npos)
      << lines[0];
}

TEST_F(RelayOnLoopback, WhatIsKeptOfMadeUpNamesIsBounded) {
  for (int i = 0; i < 100; ++i) ASSERT_FALSE(ask("n" + std::to_string(i) + ".no.test").empty());
  relay_->stop();
  const auto lines = relay_->refusals();
  ASSERT_EQ(lines.size(), Relay::kMaxRefusals + 1);
  EXPECT_EQ(lines.back(), "and 36 more refusals, not listed (at most 64 are)");
}

TEST_F(RelayOnLoopback, ALinkWithNoOriginalDestinationIsReset) {
  UniqueFd c(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(connect(c.get(), reinterpret_cast<sockaddr*>(&relay_address_), sizeof relay_address_), 0);
  char byte = 0;
  EXPECT_LE(read(c.get(), &byte, 1), 0);  // reset (or closed), never served
  relay_->stop();
  const auto lines = relay_->refusals();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_NE(lines[0].find("straight to the relay's own port"), std::string::npos) << lines[0];
}

TEST_F(RelayOnLoopback, TheBrokerRefusesBarelyAndHandsOutNothing) {
  int fd = 0;
  EXPECT_EQ(broker("www.no.test:443", &fd), "refused");
  EXPECT_EQ(fd, -1);
  EXPECT_EQ(broker("not a host", &fd), "refused");
  EXPECT_EQ(fd, -1);
  // An allowed name that resolves (from /etc/hosts: nothing leaves this
  // machine) only to an address Chock never dials is refused the same way.
  EXPECT_EQ(broker("localhost:80", &fd), "refused");
  EXPECT_EQ(fd, -1);
  relay_->stop();
  bool loopback = false;
  for (const auto& line : relay_->refusals())
    loopback |= line.find("a loopback address") != std::string::npos;
  EXPECT_TRUE(loopback);
}

TEST(FilteredMessages, TheLibraryCarriesWhatLibnftnlBuilds) {
  // The generated copy is rebuilt with the library; a stale one would set up
  // a ruleset nobody reviewed.
  EXPECT_EQ(embedded_ruleset_messages().bytes, build_ruleset_messages().bytes);
  EXPECT_EQ(embedded_ruleset_messages().acks, build_ruleset_messages().acks);
  EXPECT_EQ(embedded_route_messages().bytes, build_route_messages().bytes);
  EXPECT_GT(embedded_ruleset_messages().acks, 10);
}

}  // namespace
}  // namespace chock::net
