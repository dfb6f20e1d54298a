// libFuzzer: arbitrary bytes as a DNS query to the filtered call's stub, as
// a program inside a call may send. A crash or sanitizer report is a bug; so
// is an answer that is not a response to the query (another id, no QR bit,
// a question other than the one asked), an answer with an address that does
// not map back to the name asked, or an address for a refused name.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>

#include "net/dns_stub.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace chock::net;
  static SyntheticMap map;  // kept across inputs, as for the life of a call
  const std::span<const std::uint8_t> message(data, size);
  const auto policy = [](const Host& h) {
    return StubName{h.text.size() % 2 == 0, true, h.text.size() % 3 != 0};
  };
  auto answer = stub_answer(message, map, policy);
  if (!answer) return 0;
  const auto& r = *answer;
  if (r.size() < 12 || r[0] != data[0] || r[1] != data[1] || (r[2] & 0x80) == 0) std::abort();
  const int answers = r[6] << 8 | r[7];
  DnsQuery q;
  if (parse_query(message, q) != DnsParse::ok) {
    if (answers != 0 || r.size() != 12) std::abort();
    return 0;
  }
  if (r.size() < 12 + q.question.size() || !std::equal(q.question.begin(), q.question.end(), r.begin() + 12))
    std::abort();
  if (answers == 0) return 0;
  auto host = parse_host(q.name);
  if (!host || !policy(*host).allowed) std::abort();
  sockaddr_storage s{};
  if (q.type == 1) {
    auto* sin = reinterpret_cast<sockaddr_in*>(&s);
    sin->sin_family = AF_INET;
    std::memcpy(&sin->sin_addr, r.data() + r.size() - 4, 4);
  } else {
    auto* sin6 = reinterpret_cast<sockaddr_in6*>(&s);
    sin6->sin6_family = AF_INET6;
    std::memcpy(sin6->sin6_addr.s6_addr, r.data() + r.size() - 16, 16);
  }
  if (map.name_for(s) != host->text) std::abort();
  return 0;
}
