// The filtered call's DNS stub, as messages: synthetic addresses for allowed
// names, REFUSED for the rest, and no answer to what is not a query.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>

#include "net/dns_stub.hpp"

namespace chock::net {
namespace {

std::vector<std::uint8_t> query(const std::string& name, std::uint16_t type, std::uint16_t id = 0x1234,
                                std::uint16_t klass = 1, std::uint16_t flags = 0x0100) {
  std::vector<std::uint8_t> m = {static_cast<std::uint8_t>(id >> 8),
                                 static_cast<std::uint8_t>(id),
                                 static_cast<std::uint8_t>(flags >> 8),
                                 static_cast<std::uint8_t>(flags),
                                 0,
                                 1,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0,
                                 0};
  std::size_t start = 0;
  while (start <= name.size() && !name.empty()) {
    std::size_t end = name.find('.', start);
    if (end == std::string::npos) end = name.size();
    m.push_back(static_cast<std::uint8_t>(end - start));
    m.insert(m.end(), name.begin() + static_cast<std::ptrdiff_t>(start),
             name.begin() + static_cast<std::ptrdiff_t>(end));
    start = end + 1;
  }
  m.push_back(0);
  for (std::uint16_t v : {type, klass}) {
    m.push_back(static_cast<std::uint8_t>(v >> 8));
    m.push_back(static_cast<std::uint8_t>(v));
  }
  return m;
}

int rcode(const std::vector<std::uint8_t>& r) {
  return r[3] & 0xf;
}
int answers(const std::vector<std::uint8_t>& r) {
  return r[6] << 8 | r[7];
}
// The address in the one answer: its rdata ends the message (4 bytes for A, 16 for AAAA).
std::string answer_address(const std::vector<std::uint8_t>& r) {
  sockaddr_storage s{};
  const std::size_t rdlength =
      static_cast<std::size_t>(r[r.size() - 18] << 8 | r[r.size() - 17]) == 16 ? 16 : 4;
  if (rdlength == 16) {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&s);
    sin6->sin6_family = AF_INET6;
    std::memcpy(sin6->sin6_addr.s6_addr, r.data() + r.size() - 16, 16);
  } else {
    auto* sin = reinterpret_cast<sockaddr_in*>(&s);
    sin->sin_family = AF_INET;
    std::memcpy(&sin->sin_addr, r.data() + r.size() - 4, 4);
  }
  return address_text(s);
}

StubPolicy only(const std::string& allowed, bool ipv6 = true) {
  return [allowed, ipv6](const Host& h) { return StubName{h.text == allowed, true, ipv6}; };
}

TEST(DnsStub, AnAllowedNameGetsOneSyntheticAddressPerFamilyForTheCall) {
  SyntheticMap map;
  auto policy = [](const Host& h) { return StubName{h.text.ends_with(".test"), true, true}; };
  auto a = stub_answer(query("www.allowed.test", 1), map, policy);
  ASSERT_TRUE(a);
  EXPECT_EQ(rcode(*a), 0);
  EXPECT_EQ(answers(*a), 1);
  EXPECT_EQ((*a)[0], 0x12);
  EXPECT_EQ((*a)[1], 0x34);
  EXPECT_EQ(answer_address(*a), "198.18.0.1");
  auto again = stub_answer(query("WWW.Allowed.TEST", 1, 7), map, policy);  // 0x20 case mixing
  EXPECT_EQ(answer_address(*again), "198.18.0.1");
  EXPECT_EQ(std::string(again->begin() + 13, again->begin() + 16), "WWW") << "the question is echoed as sent";
  auto other = stub_answer(query("api.allowed.test", 1), map, policy);
  EXPECT_EQ(answer_address(*other), "198.18.0.2");
  auto v6 = stub_answer(query("www.allowed.test", 28), map, policy);
  EXPECT_EQ(answer_address(*v6), "fd5e:2a41:9c07:53::1");

  sockaddr_storage s{};
  auto* sin = reinterpret_cast<sockaddr_in*>(&s);
  sin->sin_family = AF_INET;
  ::inet_pton(AF_INET, "198.18.0.2", &sin->sin_addr);
  EXPECT_EQ(map.name_for(s), "api.allowed.test");
  ::inet_pton(AF_INET, "198.18.0.3", &sin->sin_addr);
  EXPECT_EQ(map.name_for(s), std::nullopt) << "an address the stub never gave names nothing";
  ::inet_pton(AF_INET, "198.51.100.1", &sin->sin_addr);
  EXPECT_EQ(map.name_for(s), std::nullopt);
  sockaddr_storage m{};
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&m);
  sin6->sin6_family = AF_INET6;
  ::inet_pton(AF_INET6, "::ffff:198.18.0.1", &sin6->sin6_addr);
  EXPECT_EQ(map.name_for(m), "www.allowed.test");
  ::inet_pton(AF_INET6, "fd5e:2a41:9c07:53::1", &sin6->sin6_addr);
  EXPECT_EQ(map.name_for(m), "www.allowed.test");
}

TEST(DnsStub, ARefusedNameIsRefusedNeverNxdomain) {
  SyntheticMap map;
  int asked = 0;
  auto policy = [&](const Host&) {
    ++asked;
    return StubName{false, true, true};
  };
  auto r = stub_answer(query("denied.test", 1), map, policy);
  ASSERT_TRUE(r);
  EXPECT_EQ(rcode(*r), 5);
  EXPECT_EQ(answers(*r), 0);
  EXPECT_EQ(asked, 1);
  EXPECT_EQ(map.size(), 0U);
}

// Issue 53: 261,120 names grew the host-side chock to 152 MB. Past the cap
// a new name is refused; the names answered before it keep their addresses.
TEST(DnsStub, ANameFloodIsRefusedPastTheCapAndEarlierNamesStillAnswer) {
  SyntheticMap map;
  auto policy = [](const Host& h) { return StubName{h.text.ends_with(".test"), true, true}; };
  const auto first = stub_answer(query("www.allowed.test", 1), map, policy);
  ASSERT_TRUE(first);
  constexpr std::size_t kCap = 1024;  // a real program asks for hundreds
  for (std::size_t i = 1; i < kCap; ++i) {
    auto a = stub_answer(query("n" + std::to_string(i) + ".allowed.test", i % 2 == 0 ? 1 : 28), map, policy);
    ASSERT_TRUE(a);
    ASSERT_EQ(rcode(*a), 0) << i;
  }
  EXPECT_EQ(map.names(), kCap);
  for (int i = 0; i < 500; ++i) {
    auto past = stub_answer(query("past" + std::to_string(i) + ".allowed.test", 1), map, policy);
    ASSERT_TRUE(past);
    EXPECT_EQ(rcode(*past), 5);  // REFUSED
    EXPECT_EQ(answers(*past), 0);
  }
  EXPECT_EQ(map.refused(), 500U);
  EXPECT_EQ(map.names(), kCap);
  // The neighbours: a name already answered, in either family, is answered as before.
  auto again = stub_answer(query("www.allowed.test", 1), map, policy);
  EXPECT_EQ(rcode(*again), 0);
  EXPECT_EQ(answer_address(*again), answer_address(*first));
  auto v6 = stub_answer(query("www.allowed.test", 28), map, policy);
  EXPECT_EQ(rcode(*v6), 0);
  EXPECT_EQ(answers(*v6), 1);
}

TEST(DnsStub, OnlyAAndAaaaOfClassInAreAnswered) {
  SyntheticMap map;
  for (std::uint16_t type : {15, 16, 255, 33, 12}) {  // MX, TXT, ANY, SRV, PTR
    auto r = stub_answer(query("www.allowed.test", type), map, only("www.allowed.test"));
    EXPECT_EQ(rcode(*r), 5) << type;
  }
  auto chaos = stub_answer(query("www.allowed.test", 1, 1, 3), map, only("www.allowed.test"));
  EXPECT_EQ(rcode(*chaos), 5);
  auto no_v6 = stub_answer(query("www.allowed.test", 28), map, only("www.allowed.test", false));
  EXPECT_EQ(rcode(*no_v6), 0);
  EXPECT_EQ(answers(*no_v6), 0);
}

TEST(DnsStub, WhatIsNotAPlainQueryGetsNoAnswerOrAnError) {
  SyntheticMap map;
  const auto policy = only("www.allowed.test");
  EXPECT_FALSE(stub_answer(std::vector<std::uint8_t>(11, 0), map, policy)) << "shorter than a header";
  EXPECT_FALSE(stub_answer(query("www.allowed.test", 1, 1, 1, 0x8100), map, policy)) << "a response";
  auto notimp = stub_answer(query("www.allowed.test", 1, 1, 1, 0x1000), map, policy);  // opcode 2
  EXPECT_EQ(rcode(*notimp), 4);
  auto pointer = query("www.allowed.test", 1);
  pointer[12] = 0xC0;  // a compression pointer in the question
  EXPECT_EQ(rcode(*stub_answer(pointer, map, policy)), 1);
  auto truncated = query("www.allowed.test", 1);
  truncated.resize(truncated.size() - 3);
  EXPECT_EQ(rcode(*stub_answer(truncated, map, policy)), 1);
  auto dotted = query("www.allowed.test", 1);
  dotted[14] = '.';  // "w.w": one label holding a dot, which would read as two
  EXPECT_EQ(rcode(*stub_answer(dotted, map, [](const Host&) { return StubName{true, true, true}; })), 5);
  EXPECT_EQ(rcode(*stub_answer(query("198.51.100.1", 1), map, [](const Host&) { return StubName{true}; })), 5)
      << "an address asked as a name";
  EXPECT_EQ(map.size(), 0U);
}

}  // namespace
}  // namespace chock::net
