#include "net/dns_stub.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace chock::net {

namespace {

constexpr std::uint16_t kTypeA = 1;
constexpr std::uint16_t kTypeAAAA = 28;
constexpr std::uint16_t kClassIn = 1;
constexpr std::uint32_t kTtl = 300;  // the map holds for the whole call
constexpr std::size_t kHeader = 12;

enum Rcode : std::uint8_t { kNoError = 0, kFormErr = 1, kServFail = 2, kNotImp = 4, kRefused = 5 };

constexpr std::uint32_t kV4Base = 198U << 24 | 18U << 16;  // 198.18.0.0/15
constexpr std::uint8_t kV6Prefix[8] = {0xfd, 0x5e, 0x2a, 0x41, 0x9c, 0x07, 0x00, 0x53};

std::uint16_t be16(std::span<const std::uint8_t> m, std::size_t at) {
  return static_cast<std::uint16_t>(m[at] << 8 | m[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
  out.push_back(static_cast<std::uint8_t>(v >> 8));
  out.push_back(static_cast<std::uint8_t>(v & 0xff));
}

void put32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  put16(out, static_cast<std::uint16_t>(v >> 16));
  put16(out, static_cast<std::uint16_t>(v & 0xffff));
}

bool label_byte(std::uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

std::vector<std::uint8_t> reply(std::uint16_t id, bool rd, Rcode rcode,
                                const std::vector<std::uint8_t>& question, std::uint16_t answers) {
  std::vector<std::uint8_t> out;
  out.reserve(kHeader + question.size() + 28);
  put16(out, id);
  // QR, AA (the call's view is this stub's own), RD as asked, RA.
  put16(out, static_cast<std::uint16_t>(0x8000 | 0x0400 | (rd ? 0x0100 : 0) | 0x0080 | rcode));
  put16(out, question.empty() ? 0 : 1);
  put16(out, answers);
  put16(out, 0);
  put16(out, 0);
  out.insert(out.end(), question.begin(), question.end());
  return out;
}

}  // namespace

std::optional<sockaddr_storage> SyntheticMap::address_for(const std::string& name, int family) {
  if (family != AF_INET && family != AF_INET6) return std::nullopt;
  if (!v4_.contains(name) && !v6_.contains(name)) {
    if (distinct_ >= kMaxNames) {
      ++refused_;
      return std::nullopt;
    }
    ++distinct_;
  }
  sockaddr_storage out{};
  if (family == AF_INET) {
    auto found = v4_.find(name);
    if (found == v4_.end()) {
      // Skip offsets ending in .0 and .255, which some stacks treat as special.
      while ((next_v4_ & 0xff) == 0 || (next_v4_ & 0xff) == 0xff) ++next_v4_;
      found = v4_.emplace(name, next_v4_++).first;
      names_[{AF_INET, found->second}] = name;
    }
    auto* sin = reinterpret_cast<sockaddr_in*>(&out);
    sin->sin_family = AF_INET;
    sin->sin_addr.s_addr = htonl(kV4Base + found->second);
    return out;
  }
  auto found = v6_.find(name);
  if (found == v6_.end()) {
    found = v6_.emplace(name, next_v6_++).first;
    names_[{AF_INET6, found->second}] = name;
  }
  auto* sin6 = reinterpret_cast<sockaddr_in6*>(&out);
  sin6->sin6_family = AF_INET6;
  std::memcpy(sin6->sin6_addr.s6_addr, kV6Prefix, 8);
  for (int i = 0; i < 8; ++i)
    sin6->sin6_addr.s6_addr[15 - i] = static_cast<std::uint8_t>(found->second >> (8 * i));
  return out;
}

std::optional<std::string> SyntheticMap::name_for(const sockaddr_storage& address) const {
  std::optional<std::pair<int, std::uint64_t>> key;
  if (address.ss_family == AF_INET) {
    const std::uint32_t a = ntohl(reinterpret_cast<const sockaddr_in*>(&address)->sin_addr.s_addr);
    if ((a & 0xfffe0000U) == kV4Base) key = {AF_INET, a - kV4Base};
  } else if (address.ss_family == AF_INET6) {
    const std::uint8_t* b = reinterpret_cast<const sockaddr_in6*>(&address)->sin6_addr.s6_addr;
    static const std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (std::memcmp(b, kMapped, 12) == 0) {
      const std::uint32_t a = static_cast<std::uint32_t>(b[12]) << 24 | b[13] << 16 | b[14] << 8 | b[15];
      if ((a & 0xfffe0000U) == kV4Base) key = {AF_INET, a - kV4Base};
    } else if (std::memcmp(b, kV6Prefix, 8) == 0) {
      std::uint64_t iid = 0;
      for (int i = 8; i < 16; ++i) iid = iid << 8 | b[i];
      key = {AF_INET6, iid};
    }
  }
  if (!key) return std::nullopt;
  auto found = names_.find(*key);
  if (found == names_.end()) return std::nullopt;
  return found->second;
}

DnsParse parse_query(std::span<const std::uint8_t> m, DnsQuery& out) {
  if (m.size() < kHeader) return DnsParse::ignore;
  const std::uint16_t flags = be16(m, 2);
  if ((flags & 0x8000) != 0) return DnsParse::ignore;  // a response
  out.id = be16(m, 0);
  out.recursion_desired = (flags & 0x0100) != 0;
  out.opcode = static_cast<std::uint8_t>((flags >> 11) & 0xf);
  if (out.opcode != 0) return DnsParse::not_implemented;
  // One question, no answers or authority; an EDNS OPT record may follow.
  if (be16(m, 4) != 1 || be16(m, 6) != 0 || be16(m, 8) != 0 || be16(m, 10) > 1) return DnsParse::format_error;
  std::size_t at = kHeader;
  std::string name;
  bool readable = true;
  while (true) {
    if (at >= m.size()) return DnsParse::format_error;
    const std::uint8_t length = m[at];
    if (length == 0) {
      ++at;
      break;
    }
    if (length > 63) return DnsParse::format_error;  // a compression pointer, or an extended label type
    if (at + 1 + length > m.size() || at + 1 + length - kHeader > 255) return DnsParse::format_error;
    if (!name.empty()) name += '.';
    for (std::size_t i = 0; i < length; ++i) {
      const std::uint8_t c = m[at + 1 + i];
      readable = readable && label_byte(c);
      name += static_cast<char>(c);
    }
    at += 1 + length;
  }
  if (at + 4 > m.size()) return DnsParse::format_error;
  out.type = be16(m, at);
  out.klass = be16(m, at + 2);
  out.question.assign(m.begin() + kHeader, m.begin() + static_cast<std::ptrdiff_t>(at + 4));
  // A label holding a '.', a space or a byte no host name has names nothing the policy can allow.
  out.name = readable ? name : std::string();
  return DnsParse::ok;
}

std::optional<std::vector<std::uint8_t>> stub_answer(std::span<const std::uint8_t> message, SyntheticMap& map,
                                                     const StubPolicy& policy) {
  DnsQuery q;
  switch (parse_query(message, q)) {
    case DnsParse::ignore:
      return std::nullopt;
    case DnsParse::format_error:
      return reply(q.id, q.recursion_desired, kFormErr, {}, 0);
    case DnsParse::not_implemented:
      return reply(q.id, q.recursion_desired, kNotImp, {}, 0);
    case DnsParse::ok:
      break;
  }
  if (q.klass != kClassIn || (q.type != kTypeA && q.type != kTypeAAAA))
    return reply(q.id, q.recursion_desired, kRefused, q.question, 0);
  auto host = parse_host(q.name);
  if (q.name.empty() || !host || host->kind != Host::Kind::name)
    return reply(q.id, q.recursion_desired, kRefused, q.question, 0);
  const StubName said = policy(*host);
  if (!said.allowed) return reply(q.id, q.recursion_desired, kRefused, q.question, 0);
  const bool v4 = q.type == kTypeA;
  if (!(v4 ? said.ipv4 : said.ipv6)) return reply(q.id, q.recursion_desired, kNoError, q.question, 0);
  auto address = map.address_for(host->text, v4 ? AF_INET : AF_INET6);
  if (!address) return reply(q.id, q.recursion_desired, kRefused, q.question, 0);
  std::vector<std::uint8_t> out = reply(q.id, q.recursion_desired, kNoError, q.question, 1);
  put16(out, 0xC000 | kHeader);  // the name: a pointer to the question's
  put16(out, q.type);
  put16(out, kClassIn);
  put32(out, kTtl);
  if (v4) {
    put16(out, 4);
    const auto* a =
        reinterpret_cast<const std::uint8_t*>(&reinterpret_cast<sockaddr_in*>(&*address)->sin_addr);
    out.insert(out.end(), a, a + 4);
  } else {
    put16(out, 16);
    const std::uint8_t* a = reinterpret_cast<sockaddr_in6*>(&*address)->sin6_addr.s6_addr;
    out.insert(out.end(), a, a + 16);
  }
  return out;
}

}  // namespace chock::net
