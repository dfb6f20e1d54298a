// The judge as a library: a refused name is never looked up, the addresses
// Chock never dials are refused after the lookup, the operator's range opens
// that range only, and the lookup has a deadline. Real servers, in the test
// internet only (world.sh).
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "chock/net.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

net::Ruling allow(const std::string&) {
  return {true, "allow", "test rule", ""};
}

struct Recorded {
  std::vector<std::pair<std::string, nlohmann::json>> events;
  net::JudgeOptions options() {
    net::JudgeOptions o;
    o.resolve_deadline = std::chrono::milliseconds(3000);
    o.connect_deadline = std::chrono::milliseconds(3000);
    o.record = [this](std::string_view e, const nlohmann::json& f) {
      events.emplace_back(std::string(e), f);
    };
    return o;
  }
};

net::Host host(const std::string& name) {
  auto h = net::parse_host(name);
  EXPECT_TRUE(h) << name;
  return *h;
}

// GET /whoami over a judged connection: "served at ADDRESS".
std::string whoami(net::Connection& c, const std::string& name) {
  const std::string request = "GET /whoami HTTP/1.0\r\nHost: " + name + "\r\n\r\n";
  EXPECT_EQ(c.write(request.data(), request.size()), static_cast<ssize_t>(request.size()));
  std::string reply;
  char buffer[4096];
  for (ssize_t n; (n = c.read(buffer, sizeof buffer)) > 0;) reply.append(buffer, static_cast<std::size_t>(n));
  return reply;
}

TEST(Judge, AnAllowedNameIsResolvedCheckedAndDialled) {
  CHOCK_NEED_WORLD();
  Recorded r;
  {
    net::Judge judge(allow, r.options());
    auto c = judge.connect(host("www.chock.test"), 80);
    ASSERT_TRUE(c) << c.error().message();
    EXPECT_NE(whoami(*c, "www.chock.test").find("served at "), std::string::npos);
    c->close();
    EXPECT_EQ(judge.summary()["connections"], 1);
  }
  ASSERT_EQ(r.events.size(), 1U);
  const auto& [event, fields] = r.events[0];
  EXPECT_EQ(event, "net.connect");
  EXPECT_EQ(fields["action"], "net.connect.test.chock.www.80");
  EXPECT_EQ(fields["decision"], "allow");
  EXPECT_EQ(fields["rule"], "test rule");
  EXPECT_GT(fields["bytes_in"].get<int>(), 0);
  EXPECT_GT(fields["bytes_out"].get<int>(), 0);
  EXPECT_TRUE(fields.contains("address") && fields.contains("duration_ms"));
}

TEST(Judge, ARefusedNameIsNeverResolved) {
  CHOCK_NEED_WORLD();
  Recorded r;
  net::Judge judge(
      [](const std::string& action) {
        return net::Ruling{false, "deny", "chock.zon:3:9", action + " is denied by chock.zon:3:9"};
      },
      r.options());
  auto c = judge.connect(host("denied.chock.test"), 443);
  ASSERT_FALSE(c);
  EXPECT_EQ(c.error().message(), "net.connect.test.chock.denied.443 is denied by chock.zon:3:9");
  EXPECT_EQ(dns_queries("denied.chock.test"), 0) << "a refused name reached the name server";
  ASSERT_EQ(r.events.size(), 1U);
  EXPECT_EQ(r.events[0].second["refused"], "net.connect.test.chock.denied.443 is denied by chock.zon:3:9");
  EXPECT_EQ(r.events[0].second["resolved"], false);
  EXPECT_EQ(judge.summary()["refused"], 1);
}

TEST(Judge, AddressesChockNeverDialsAreRefusedAfterTheLookup) {
  CHOCK_NEED_WORLD();
  const std::pair<const char*, const char*> cases[] = {
      {"loopback.chock.test", "127.0.0.1: a loopback address"},
      {"private.chock.test", "10.0.0.1: a private address"},
      {"metadata.chock.test", "169.254.169.254: the cloud metadata address"},
      {"loopback6.chock.test", "::1: a loopback address"},
      {"mapped.chock.test", "::ffff:127.0.0.1: an IPv6 form of a loopback address"},
      {"nat64.chock.test", "64:ff9b::a9fe:a9fe: an IPv6 form of the cloud metadata address"},
      {"self.chock.test", "198.51.100.1: an address of this machine"},
  };
  for (const auto& [name, why] : cases) {
    Recorded each;
    net::Judge judge(allow, each.options());
    auto c = judge.connect(host(name), 80);
    ASSERT_FALSE(c) << name << " was dialled";
    EXPECT_NE(c.error().message().find(why), std::string::npos) << c.error().message();
    EXPECT_GE(dns_queries(name), 1) << name;
  }
  // An address literal is judged without a lookup, by the same rules.
  Recorded r;
  net::Judge judge(allow, r.options());
  auto literal = judge.connect(host("10.0.0.1"), 80);
  ASSERT_FALSE(literal);
  EXPECT_NE(literal.error().message().find("10.0.0.1: a private address"), std::string::npos);
}

TEST(Judge, TheOperatorsRangeOpensThatRangeOnly) {
  CHOCK_NEED_WORLD();
  Recorded r;
  net::JudgeOptions o = r.options();
  o.allowed_private = {*net::parse_cidr("10.20.0.0/16")};
  net::Judge judge(allow, o);
  auto corp = judge.connect(host("corp.chock.test"), 80);
  ASSERT_TRUE(corp) << corp.error().message();
  EXPECT_NE(whoami(*corp, "corp.chock.test").find("served at 10.20.0.5"), std::string::npos);
  auto other = judge.connect(host("private.chock.test"), 80);
  ASSERT_FALSE(other);
  EXPECT_NE(other.error().message().find("10.0.0.1: a private address"), std::string::npos);
  // Without the range, the same name is refused.
  net::Judge closed(allow, r.options());
  EXPECT_FALSE(closed.connect(host("corp.chock.test"), 80));
}

TEST(Judge, AnIPv6OnlyNameIsDialledOverIPv6) {
  CHOCK_NEED_WORLD();
  Recorded r;
  net::Judge judge(allow, r.options());
  auto c = judge.connect(host("v6.chock.test"), 80);
  ASSERT_TRUE(c) << c.error().message();
  EXPECT_EQ(net::address_text(c->address()), "2001:db8:100::10");
  EXPECT_NE(whoami(*c, "v6.chock.test").find("served at 2001:db8:100::10"), std::string::npos);
}

TEST(Dial, AConnectThatNeverCompletesIsGivenUpOnAtTheDeadline) {
  CHOCK_NEED_WORLD();
  // A listener that never accepts, its queue full: the kernel drops the next SYN, so a
  // connect to it waits for as long as the dialler lets it.
  const int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(listener, 0), 0);
  socklen_t size = sizeof at;
  ASSERT_EQ(::getsockname(listener, reinterpret_cast<sockaddr*>(&at), &size), 0);
  std::vector<int> queued;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    (void)::connect(fd, reinterpret_cast<sockaddr*>(&at), sizeof at);
    queued.push_back(fd);
  }
  sockaddr_storage to{};
  std::memcpy(&to, &at, sizeof at);
  const auto start = std::chrono::steady_clock::now();
  auto fd = net::dial(to, ntohs(at.sin_port), std::chrono::milliseconds(400));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(fd);
  EXPECT_EQ(fd.error().code, ETIMEDOUT) << fd.error().message();
  EXPECT_GE(took, std::chrono::milliseconds(350));
  EXPECT_LT(took, std::chrono::milliseconds(1500));
  for (int q : queued) ::close(q);
  ::close(listener);
}

TEST(Resolve, ANameServerThatNeverAnswersIsGivenUpOnAtTheDeadline) {
  CHOCK_NEED_WORLD();
  const auto start = std::chrono::steady_clock::now();
  auto found = net::resolve(host("slow.chock.test"), std::chrono::milliseconds(1500));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(found);
  EXPECT_EQ(found.error().message(), "resolve slow.chock.test: no answer within 1500 ms");
  EXPECT_LT(took, std::chrono::milliseconds(3000));
  EXPECT_GE(dns_queries("slow.chock.test"), 1);
}

TEST(Resolve, EtcHostsIsReadBeforeTheNameServer) {
  CHOCK_NEED_WORLD();
  auto found = net::resolve(host("hosts-file.chock.test"), std::chrono::milliseconds(2000));
  ASSERT_TRUE(found) << found.error().message();
  ASSERT_FALSE(found->empty());
  EXPECT_EQ(net::address_text(found->front()), "198.51.100.10");
  EXPECT_EQ(dns_queries("hosts-file.chock.test"), 0);
}

}  // namespace
}  // namespace chock::test
