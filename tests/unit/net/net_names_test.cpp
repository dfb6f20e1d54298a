// The network judge's first half: how a host is named for the policy table,
// and which addresses Chock never dials. Hostile input throughout: a name
// comes from a program or a web page.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include "chock/net.hpp"
#include "policy/policy.hpp"

namespace chock::net {
namespace {

sockaddr_storage addr(const std::string& text) {
  auto h = parse_host(text);
  EXPECT_TRUE(h) << text << ": " << (h ? "" : h.error().message());
  return h ? h->address : sockaddr_storage{};
}

std::string why(const std::string& text, const std::vector<Cidr>& allowed = {},
                const std::vector<sockaddr_storage>& own = {}) {
  return refusal(addr(text), allowed, own).value_or("");
}

TEST(NetNames, ANameIsJudgedByItsLabelsReversedAndLowerCased) {
  auto h = parse_host("API.GitHub.com.");
  ASSERT_TRUE(h) << h.error().message();
  EXPECT_EQ(h->text, "api.github.com");
  EXPECT_EQ(connect_action(*h, 443), "net.connect.com.github.api.443");
  EXPECT_EQ(fetch_action(*h), "net.fetch.com.github.api");
  auto hp = parse_host_port("registry.npmjs.org:443");
  ASSERT_TRUE(hp) << hp.error().message();
  EXPECT_EQ(connect_action(hp->first, hp->second), "net.connect.org.npmjs.registry.443");
  // Every action Chock makes is one the policy table accepts.
  EXPECT_TRUE(policy::validate_action(connect_action(hp->first, hp->second)));
}

TEST(NetNames, AnAddressIsANameOfItsOwnInNetworkOrder) {
  auto v4 = parse_host_port("198.51.100.7:8080");
  ASSERT_TRUE(v4) << v4.error().message();
  EXPECT_EQ(connect_action(v4->first, v4->second), "net.connect.ip4.198.51.100.7.8080");
  auto v6 = parse_host_port("[2001:DB8::1]:443");
  ASSERT_TRUE(v6) << v6.error().message();
  EXPECT_EQ(v6->first.text, "2001:db8::1");
  EXPECT_EQ(connect_action(v6->first, v6->second),
            "net.connect.ip6.2001.0db8.0000.0000.0000.0000.0000.0001.443");
  EXPECT_TRUE(policy::validate_action(connect_action(v6->first, v6->second)));
  EXPECT_EQ(fetch_action(*parse_host("2001:db8::1")),
            "net.fetch.ip6.2001.0db8.0000.0000.0000.0000.0000.0001");
}

TEST(NetNames, WhatIsNotAHostIsRefusedAndSaidWhy) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "empty"},
      {"exa mple.com", "a byte outside letters"},
      {"ex\xc3\xa4mple.com", "write a non-ASCII name as xn--"},
      {"a..b", "an empty label"},
      {"-a.com", "starts or ends with '-'"},
      {std::string(64, 'a') + ".com", "a label longer than 63 bytes"},
      {std::string(250, 'a').insert(60, ".").insert(120, ".").insert(180, ".") + ".com",
       "longer than 253 bytes"},
      {"1.2.3", "a numeric form other than a dotted quad"},
      {"010.1.1.1", "a numeric form"},
      {"127.1", "a numeric form"},
      {"0x7f.0x1", "a numeric form"},
      {"evil.ip4", "Chock's own for addresses"},
      {"fe80::1%eth0", "a zone index is refused"},
      {"[198.51.100.7]", "brackets hold an IPv6 address only"},
      {"1:2:3", "not an IPv6 address"},
      {"a\nb.com", "\\x0a"},
  };
  for (const auto& [text, said] : cases) {
    auto h = parse_host(text);
    ASSERT_FALSE(h) << text << " was taken as " << h->text;
    EXPECT_NE(h.error().message().find(said), std::string::npos) << h.error().message();
  }
  for (const char* bad : {"host", "host:", "host:0", "host:65536", "host:08", "host:1x", "::1:80", "[::1]80"})
    EXPECT_FALSE(parse_host_port(bad)) << bad;
}

TEST(NetAddresses, WhatWouldReachThisMachineOrItsNeighboursIsNeverDialled) {
  EXPECT_EQ(why("127.0.0.1"), "a loopback address");
  EXPECT_EQ(why("10.0.0.1"), "a private address");
  EXPECT_EQ(why("172.16.5.4"), "a private address");
  EXPECT_EQ(why("192.168.1.1"), "a private address");
  EXPECT_EQ(why("100.64.0.1"), "a shared (carrier-grade NAT) address");
  EXPECT_EQ(why("169.254.169.254"), "the cloud metadata address");
  EXPECT_EQ(why("169.254.1.1"), "a link-local address");
  EXPECT_EQ(why("100.100.100.200"), "a cloud metadata address (100.100.100.200)");
  EXPECT_EQ(why("0.0.0.0"), "in 0.0.0.0/8 (this host)");
  EXPECT_EQ(why("255.255.255.255"), "the broadcast address");
  EXPECT_EQ(why("224.0.0.1"), "a multicast address");
  EXPECT_EQ(why("240.0.0.1"), "in 240.0.0.0/4 (reserved)");
  EXPECT_EQ(why("::1"), "a loopback address");
  EXPECT_EQ(why("::"), "the unspecified address");
  EXPECT_EQ(why("fe80::1"), "a link-local address");
  EXPECT_EQ(why("fd00:ec2::254"), "the cloud metadata address (fd00:ec2::254)");
  EXPECT_EQ(why("fd12:3456::1"), "a private (unique local) address");
  EXPECT_EQ(why("ff02::1"), "a multicast address");
  // IPv6 forms that carry an IPv4 address are judged as that address.
  EXPECT_EQ(why("::ffff:127.0.0.1"), "an IPv6 form of a loopback address");
  EXPECT_EQ(why("64:ff9b::a9fe:a9fe"), "an IPv6 form of the cloud metadata address");
  EXPECT_EQ(why("::10.0.0.1"), "an IPv6 form of a private address");
  // The neighbours: public addresses (the documentation ranges stand for them) are dialled.
  EXPECT_EQ(why("198.51.100.7"), "");
  EXPECT_EQ(why("2001:db8::1"), "");
  EXPECT_EQ(why("::ffff:198.51.100.7"), "");
}

TEST(NetAddresses, AnOperatorRangeAllowsThatPrivateRangeAndOnlyIt) {
  auto registry = parse_cidr("10.20.0.0/16");
  ASSERT_TRUE(registry) << registry.error().message();
  EXPECT_EQ(why("10.20.3.4", {*registry}), "");
  EXPECT_EQ(why("::ffff:10.20.3.4", {*registry}), "");
  EXPECT_EQ(why("10.21.0.1", {*registry}), "a private address");
  // Only the private ranges widen: loopback and metadata stay refused inside an allowed range.
  auto wide = parse_cidr("127.0.0.0/8");
  ASSERT_TRUE(wide);
  EXPECT_EQ(why("127.0.0.1", {*wide}), "a loopback address");
  auto ula = parse_cidr("fd12:3456::/32");
  ASSERT_TRUE(ula) << ula.error().message();
  EXPECT_EQ(why("fd12:3456::1", {*ula}), "");
  EXPECT_EQ(why("fd99::1", {*ula}), "a private (unique local) address");
  for (const char* bad : {"10.0.0.0", "10.0.0.0/33", "0.0.0.0/0", "::/0", "example.com/8", "10.0.0.0/x"})
    EXPECT_FALSE(parse_cidr(bad)) << bad;
}

TEST(NetAddresses, AnAddressOfThisMachinesOwnInterfacesIsNeverDialled) {
  const auto own = own_addresses();
  ASSERT_FALSE(own.empty()) << "getifaddrs listed no address";
  sockaddr_storage mine = addr("198.51.100.9");
  EXPECT_EQ(why("198.51.100.9", {}, {mine}), "an address of this machine");
  EXPECT_EQ(why("::ffff:198.51.100.9", {}, {mine}), "an address of this machine");
  EXPECT_EQ(why("198.51.100.10", {}, {mine}), "");
  for (const auto& a : own) EXPECT_TRUE(refusal(a, {}, own)) << address_text(a);
}

}  // namespace
}  // namespace chock::net
