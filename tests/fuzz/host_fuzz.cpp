// libFuzzer: arbitrary bytes as a host, a host:port, a URL and an address range, as
// the network judge reads them from programs and pages it does not trust.
// A crash or sanitizer report is a bug; so is a host that parses to an
// action the policy table refuses, or that parses differently a second time.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "chock/net.hpp"
#include "policy/policy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace chock::net;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto h = parse_host(text)) {
    if (!chock::policy::validate_action(connect_action(*h, 443))) std::abort();
    if (!chock::policy::validate_action(fetch_action(*h))) std::abort();
    auto again = parse_host(h->text);
    if (!again || again->labels != h->labels) std::abort();
    if (h->kind != Host::Kind::name) (void)refusal(h->address, {}, {});
  }
  if (auto hp = parse_host_port(text)) {
    if (hp->second == 0) std::abort();
  }
  // A URL Chock passes on is its own rebuilt text: that must parse back to itself,
  // keep the host that was judged and carry no credentials.
  if (auto url = parse_url(text)) {
    if (url->scheme != "http" && url->scheme != "https") std::abort();
    const std::string rebuilt = url->text();
    auto again = parse_url(rebuilt);
    if (!again || again->text() != rebuilt || again->host.labels != url->host.labels ||
        again->port != url->port)
      std::abort();
    if (url->authority().find('@') != std::string::npos || url->target.empty() || url->target[0] != '/')
      std::abort();
  }
  if (auto range = parse_cidr(text)) {
    if (!contains(*range, range->base)) std::abort();
  }
  return 0;
}
