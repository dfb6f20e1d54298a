// The host side of a filtered call, without a namespace: the splice pump
// (both ways, half-close, every byte), the stub served from a thread, the
// broker's refusals, a link with no original destination, what a hostile
// call does to the broker and the stub (issue 53), and the netlink messages
// the library carries being the ones libnftnl builds.
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
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

// Whether this kernel refuses SCM_RIGHTS to a socket that asks
// (SO_PASSRIGHTS, Linux 6.16), asked of the kernel, not of Chock's code.
bool kernel_refuses_passed_fds() {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return false;
  UniqueFd a(pair[0]), b(pair[1]);
  const int off = 0;
  constexpr int kSoPassRightsNumber = 83;  // asm-generic/socket.h
  return setsockopt(a.get(), SOL_SOCKET, kSoPassRightsNumber, &off, sizeof off) == 0;
}

// stop() within `deadline`; a stop that hangs fails the test and ends the
// binary (the relay's threads could not be let go of otherwise).
void stops_within(Relay& relay, std::chrono::milliseconds deadline) {
  auto stopped = std::async(std::launch::async, [&relay] { relay.stop(); });
  if (stopped.wait_for(deadline) == std::future_status::ready) return;
  ADD_FAILURE() << "Relay::stop() did not return within " << deadline.count() << " ms";
  std::fflush(nullptr);
  std::_Exit(1);
}

std::size_t entries(const char* dir) {
  std::size_t n = 0;
  if (DIR* d = opendir(dir)) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.' ? 1 : 0;
    closedir(d);
  }
  return n;
}

// The attack of issue 53: the broker flooded with requests whose answers
// are never read. The relay never blocks on the call's socket: past its
// unread answers the call loses its broker (EPIPE), with a line, and stop()
// ends at once.
TEST_F(RelayOnLoopback, ABrokerFloodedWithoutReadingIsClosedAndNeverBlocksTheRelay) {
  const int inside = broker_inside_.get();
  int error = 0;
  std::size_t sent = 0;
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       std::chrono::steady_clock::now() < until;) {
    if (send(inside, "nonsense", 8, MSG_DONTWAIT | MSG_NOSIGNAL) == 8) {
      ++sent;
    } else if (errno == EAGAIN) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } else {
      error = errno;
      break;
    }
  }
  EXPECT_EQ(error, EPIPE) << "after " << sent << " requests";
  stops_within(*relay_, std::chrono::milliseconds(1000));
  bool said = false;
  for (const auto& line : relay_->refusals())
    said |= line.starts_with("the call lost its broker (CHOCK_BROKER_FD): a program of it asked ");
  EXPECT_TRUE(said);
  // What it was sent before the end is still there to read, then the end
  // (said first as a reset: the relay closed with requests it never read).
  char answer[16];
  std::size_t answers = 0;
  ssize_t n = 0;
  while ((n = recv(inside, answer, sizeof answer, MSG_DONTWAIT)) > 0 || (n < 0 && errno == ECONNRESET))
    answers += n > 0 ? 1 : 0;
  EXPECT_EQ(n, 0);
  EXPECT_GT(answers, Relay::kMaxUnreadAnswers);
}

// The neighbour: a call that reads each answer is answered without end.
TEST_F(RelayOnLoopback, ABrokerWhoseAnswersAreReadAnswersEveryRequest) {
  int fd = 0;
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(broker("nonsense", &fd), "refused") << i;
  relay_->stop();
  for (const auto& line : relay_->refusals())
    EXPECT_FALSE(line.starts_with("the call lost its broker")) << line;
}

// A descriptor sent to the broker is never kept: refused at the sender
// where the kernel can (SO_PASSRIGHTS), else closed by the broker as it
// arrives. Either way a pipe whose write end went that way reads its end.
TEST_F(RelayOnLoopback, ADescriptorSentToTheBrokerIsNeverKept) {
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  UniqueFd read_end(p[0]), write_end(p[1]);
  char byte = 'x';
  iovec iov{&byte, 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  FdControl control;
  attach_fd(msg, control, write_end.get());
  const ssize_t sent = sendmsg(broker_inside_.get(), &msg, MSG_NOSIGNAL);
  if (kernel_refuses_passed_fds()) {
    EXPECT_EQ(sent, -1);
    EXPECT_EQ(errno, EPERM);
  }
  write_end.reset();
  pollfd ended{read_end.get(), POLLIN, 0};
  ASSERT_EQ(poll(&ended, 1, 2000), 1) << "a copy of the pipe's write end is held";
  EXPECT_EQ(read(read_end.get(), &byte, 1), 0);
}

// Once stopped, nothing of the call is left in this process: its threads
// joined, its sockets closed (the broker's end reads as ended at once).
TEST(RelayStop, LeavesNoThreadAndNoSocketOfTheCall) {
  const std::size_t tasks = entries("/proc/self/task");
  const std::size_t fds = entries("/proc/self/fd");
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd inside(pair[1]);
  UniqueFd stub(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  auto judge = std::make_shared<Judge>([](const std::string&) { return Ruling{false, "deny", "", "no"}; });
  Relay relay(judge, RelaySockets{std::move(stub), UniqueFd(), UniqueFd(), UniqueFd(pair[0])});
  EXPECT_EQ(entries("/proc/self/task"), tasks + 2);  // the stub's and the broker's
  send(inside.get(), "nonsense", 8, MSG_NOSIGNAL);
  char answer[16];
  EXPECT_EQ(recv(inside.get(), answer, sizeof answer, 0), 7);  // "refused"
  stops_within(relay, std::chrono::milliseconds(1000));
  EXPECT_EQ(entries("/proc/self/task"), tasks);
  EXPECT_EQ(recv(inside.get(), answer, sizeof answer, 0), 0);
  inside.reset();
  EXPECT_EQ(entries("/proc/self/fd"), fds + 1);  // the relay's own eventfd, until it goes
}

TEST_F(RelayOnLoopback, ANameFloodIsRefusedPastTheCapWithALine) {
  constexpr std::size_t kCap = 1024;  // a real program asks for hundreds
  for (std::size_t i = 0; i < kCap + 20; ++i) {
    const auto a = ask("n" + std::to_string(i) + ".ok.test");
    ASSERT_GE(a.size(), 12U);
    ASSERT_EQ(a[3] & 0xf, i < kCap ? 0 : 5) << i;
  }
  EXPECT_EQ(ask("n0.ok.test")[3] & 0xf, 0);  // answered before: still answered
  relay_->stop();
  const auto lines = relay_->refusals();
  ASSERT_EQ(lines.size(), 1U);
  EXPECT_EQ(lines[0],
            "the call's resolver refused 20 questions for new names: a call may ask for 1024 names, and this "
            "one asked for more");
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
