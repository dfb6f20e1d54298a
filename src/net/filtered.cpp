// The messages tools/nft_gen.cpp built from ruleset_build.cpp, as the
// library carries them.
#include "net/filtered.hpp"

namespace chock::net {

namespace {
#include "filtered_netlink.inc"

NetlinkBatch copy(const std::uint8_t* bytes, std::size_t size, int acks) {
  NetlinkBatch b;
  b.bytes.assign(bytes, bytes + size);
  b.acks = acks;
  return b;
}
}  // namespace

const NetlinkBatch& embedded_route_messages() {
  static const NetlinkBatch b = copy(kRouteBytes, sizeof kRouteBytes, kRouteAcks);
  return b;
}

const NetlinkBatch& embedded_ruleset_messages() {
  static const NetlinkBatch b = copy(kRulesetBytes, sizeof kRulesetBytes, kRulesetAcks);
  return b;
}

}  // namespace chock::net
