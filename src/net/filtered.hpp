// The fixed shape of a filtered call's network namespace: where its resolver
// answers, where the relay listens, and the netlink messages that set up the
// routes and the nftables ruleset. The namespace is new for every call, so
// every address and port here is free when Chock binds it, and the messages
// are built once, at build time (tools/nft_gen.cpp), by libnftnl: a call
// sends bytes, it does not allocate.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace chock::net {

// The stub resolver: UDP 127.0.0.53:53, the only UDP destination outside the
// call's own loopback servers a program can reach.
inline constexpr std::uint8_t kStubAddress[4] = {127, 0, 0, 53};
inline constexpr const char* kStubAddressText = "127.0.0.53";
inline constexpr std::uint16_t kStubPort = 53;
// The relay's listeners, 127.0.0.1:1 and [::1]:1. A privileged port: no
// program of the call (which holds no capability) can bind it first, and no
// test suite's server picks it.
inline constexpr std::uint16_t kRelayPort = 1;

// The synthetic blocks as bytes (see dns_stub.hpp for their text).
inline constexpr std::uint8_t kSyntheticV4Base[4] = {198, 18, 0, 0};
inline constexpr unsigned kSyntheticV4Prefix = 15;
inline constexpr std::uint8_t kSyntheticV6Base[16] = {0xfd, 0x5e, 0x2a, 0x41, 0x9c, 0x07, 0x00, 0x53};
inline constexpr unsigned kSyntheticV6Prefix = 64;

// The table's name, so a test or doctor can find it.
inline constexpr const char* kRulesetTable = "chock_filtered";

// Netlink messages sent as one datagram, and how many acknowledgements the
// kernel sends back for them.
struct NetlinkBatch {
  std::vector<std::uint8_t> bytes;
  int acks = 0;
};

// NETLINK_ROUTE: local routes on lo for both synthetic blocks, so a connect
// to a synthetic address reaches the nat hook (and anything else finds no
// route: ENETUNREACH at once).
NetlinkBatch build_route_messages();
// NETLINK_NETFILTER: the ruleset, one batch (all or nothing):
//   nat output:  TCP to a synthetic block -> redirect to the relay's port
//   filter output: established/related accept; the relay's port accepted only
//   when redirected (a direct connect is reset); UDP to the stub; the call's
//   own loopback; every other TCP packet reset, everything else rejected with
//   port-unreachable (ECONNREFUSED, never a hang).
NetlinkBatch build_ruleset_messages();

// The same, as built into the library (the generated copy).
const NetlinkBatch& embedded_route_messages();
const NetlinkBatch& embedded_ruleset_messages();

}  // namespace chock::net
