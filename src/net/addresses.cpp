// The addresses Chock never dials (chock/net.hpp): what would reach this
// machine, its neighbours or a cloud's metadata service instead of the
// internet. An IPv6 form that carries an IPv4 address is judged as that one.
#include <arpa/inet.h>
#include <ifaddrs.h>

#include <cstring>

#include "chock/net.hpp"

namespace chock::net {

namespace {

std::uint32_t v4(const sockaddr_storage& a) {
  return ntohl(reinterpret_cast<const sockaddr_in*>(&a)->sin_addr.s_addr);
}

const std::uint8_t* v6(const sockaddr_storage& a) {
  return reinterpret_cast<const sockaddr_in6*>(&a)->sin6_addr.s6_addr;
}

bool in4(std::uint32_t a, std::uint32_t base, unsigned prefix) {
  const std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
  return (a & mask) == (base & mask);
}

bool prefix_match(const std::uint8_t* a, const std::uint8_t* b, unsigned prefix) {
  for (unsigned i = 0; i < prefix; ++i) {
    const unsigned byte = i / 8, bit = 7 - i % 8;
    if (((a[byte] >> bit) & 1) != ((b[byte] >> bit) & 1)) return false;
  }
  return true;
}

constexpr std::uint32_t ip(unsigned a, unsigned b, unsigned c, unsigned d) {
  return a << 24 | b << 16 | c << 8 | d;
}

// The IPv4 address an IPv6 one carries: ::ffff:a.b.c.d (mapped), ::a.b.c.d
// (compatible, not :: or ::1), 64:ff9b::a.b.c.d (NAT64).
std::optional<std::uint32_t> carried_v4(const std::uint8_t* a) {
  static const std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static const std::uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  static const std::uint8_t kZero[12] = {};
  const std::uint32_t tail = static_cast<std::uint32_t>(a[12]) << 24 | a[13] << 16 | a[14] << 8 | a[15];
  if (std::memcmp(a, kMapped, 12) == 0 || std::memcmp(a, kNat64, 12) == 0) return tail;
  if (std::memcmp(a, kZero, 12) == 0 && tail > 1) return tail;
  return std::nullopt;
}

std::optional<std::string> v4_refusal(std::uint32_t a, bool private_allowed) {
  if (in4(a, ip(127, 0, 0, 0), 8)) return "a loopback address";
  if (in4(a, ip(0, 0, 0, 0), 8)) return "in 0.0.0.0/8 (this host)";
  if (in4(a, ip(169, 254, 169, 254), 32)) return "the cloud metadata address";
  if (in4(a, ip(169, 254, 0, 0), 16)) return "a link-local address";
  if (in4(a, ip(100, 100, 100, 200), 32)) return "a cloud metadata address (100.100.100.200)";
  if (a == ip(255, 255, 255, 255)) return "the broadcast address";
  if (in4(a, ip(224, 0, 0, 0), 4)) return "a multicast address";
  if (in4(a, ip(240, 0, 0, 0), 4)) return "in 240.0.0.0/4 (reserved)";
  if (!private_allowed) {
    if (in4(a, ip(10, 0, 0, 0), 8) || in4(a, ip(172, 16, 0, 0), 12) || in4(a, ip(192, 168, 0, 0), 16))
      return "a private address";
    if (in4(a, ip(100, 64, 0, 0), 10)) return "a shared (carrier-grade NAT) address";
  }
  return std::nullopt;
}

std::optional<std::string> kind_refusal(const sockaddr_storage& address, bool allowed);

bool same_address(const sockaddr_storage& a, const sockaddr_storage& b) {
  if (a.ss_family != b.ss_family) return false;
  if (a.ss_family == AF_INET) return v4(a) == v4(b);
  return a.ss_family == AF_INET6 && std::memcmp(v6(a), v6(b), 16) == 0;
}

}  // namespace

std::string address_text(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "?";
  if (address.ss_family == AF_INET)
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&address)->sin_addr, text, sizeof text);
  else if (address.ss_family == AF_INET6)
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr, text, sizeof text);
  return text;
}

Expected<Cidr> parse_cidr(std::string_view text) {
  const auto slash = text.find('/');
  auto fail = [&](const std::string& why) {
    return Error{"range '" + std::string(text.substr(0, 64)) + "': " + why, "", 0, Errc::bad_config};
  };
  if (slash == std::string_view::npos) return fail("write it as address/prefix, e.g. 10.20.0.0/16");
  auto host = parse_host(text.substr(0, slash));
  if (!host || host->kind == Host::Kind::name) return fail("not an IPv4 or IPv6 address before the '/'");
  const std::string_view bits = text.substr(slash + 1);
  unsigned prefix = 0;
  if (bits.empty() || bits.size() > 3) return fail("a prefix length after the '/'");
  for (char c : bits) {
    if (c < '0' || c > '9') return fail("a prefix length after the '/'");
    prefix = prefix * 10 + static_cast<unsigned>(c - '0');
  }
  const unsigned max = host->kind == Host::Kind::ip4 ? 32 : 128;
  if (prefix > max) return fail("a prefix longer than " + std::to_string(max));
  if (prefix < (host->kind == Host::Kind::ip4 ? 8U : 16U))
    return fail("wider than a /8 (IPv4) or /16 (IPv6): allow the range a registry is in, not the world");
  return Cidr{host->address, prefix};
}

bool contains(const Cidr& range, const sockaddr_storage& address) {
  if (range.base.ss_family == AF_INET) {
    std::optional<std::uint32_t> a;
    if (address.ss_family == AF_INET) a = v4(address);
    if (address.ss_family == AF_INET6) a = carried_v4(v6(address));
    return a && in4(*a, v4(range.base), range.prefix);
  }
  return address.ss_family == AF_INET6 && prefix_match(v6(address), v6(range.base), range.prefix);
}

bool within_private(const Cidr& range) {
  if (range.base.ss_family == AF_INET) {
    const std::uint32_t a = v4(range.base);
    const std::pair<std::uint32_t, unsigned> kRanges[] = {
        {ip(10, 0, 0, 0), 8}, {ip(172, 16, 0, 0), 12}, {ip(192, 168, 0, 0), 16}, {ip(100, 64, 0, 0), 10}};
    for (const auto& [base, prefix] : kRanges)
      if (range.prefix >= prefix && in4(a, base, prefix)) return true;
    return false;
  }
  return range.base.ss_family == AF_INET6 && range.prefix >= 7 && (v6(range.base)[0] & 0xfe) == 0xfc;
}

std::optional<std::string> refusal(const sockaddr_storage& address, const std::vector<Cidr>& allowed_private,
                                   const std::vector<sockaddr_storage>& own) {
  bool allowed = false;
  for (const auto& r : allowed_private) allowed = allowed || contains(r, address);
  // What the address is says more than that it is this machine's (127.0.0.1 is both).
  if (auto why = kind_refusal(address, allowed)) return why;
  for (const auto& o : own)
    if (same_address(o, address)) return std::string("an address of this machine");
  if (address.ss_family == AF_INET6)
    if (auto inside = carried_v4(v6(address)))
      for (const auto& o : own)
        if (o.ss_family == AF_INET && v4(o) == *inside) return std::string("an address of this machine");
  return std::nullopt;
}

namespace {
std::optional<std::string> kind_refusal(const sockaddr_storage& address, bool allowed) {
  if (address.ss_family == AF_INET) return v4_refusal(v4(address), allowed);
  if (address.ss_family != AF_INET6) return std::string("not an IPv4 or IPv6 address");
  const std::uint8_t* a = v6(address);
  if (auto inside = carried_v4(a)) {
    if (auto why = v4_refusal(*inside, allowed)) return "an IPv6 form of " + *why;
    return std::nullopt;
  }
  static const std::uint8_t kZero[16] = {};
  static const std::uint8_t kLoopback[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  static const std::uint8_t kEc2[16] = {0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54};
  if (std::memcmp(a, kZero, 16) == 0) return std::string("the unspecified address");
  if (std::memcmp(a, kLoopback, 16) == 0) return std::string("a loopback address");
  if (std::memcmp(a, kEc2, 16) == 0) return std::string("the cloud metadata address (fd00:ec2::254)");
  if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) return std::string("a link-local address");
  if (a[0] == 0xff) return std::string("a multicast address");
  if ((a[0] & 0xfe) == 0xfc && !allowed) return std::string("a private (unique local) address");
  return std::nullopt;
}
}  // namespace

std::vector<sockaddr_storage> own_addresses() {
  std::vector<sockaddr_storage> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    sockaddr_storage s{};
    if (i->ifa_addr->sa_family == AF_INET) {
      std::memcpy(&s, i->ifa_addr, sizeof(sockaddr_in));
    } else if (i->ifa_addr->sa_family == AF_INET6) {
      std::memcpy(&s, i->ifa_addr, sizeof(sockaddr_in6));
    } else {
      continue;
    }
    out.push_back(s);
  }
  ::freeifaddrs(list);
  return out;
}

}  // namespace chock::net
