// The program process's part of a filtered network, while it still holds
// CAP_NET_ADMIN in the call's user namespace: the synthetic routes, the
// nftables ruleset, and the sockets the host side serves (the stub's, the
// relay's two listeners), which are sent to the caller over the report
// channel and closed here, so no process of the call holds them once the
// program runs.
#pragma once

#include "net/filtered.hpp"
#include "sandbox/steps.hpp"

namespace chock::sandbox {

// Which socket a Record::net_socket carries (its detail).
enum NetSocket : int { kStubSocket = 0, kRelay4Socket = 1, kRelay6Socket = 2, kNetSocketCount = 3 };

struct FilteredPlan {
  bool enabled = false;
  const net::NetlinkBatch* routes = nullptr;
  const net::NetlinkBatch* ruleset = nullptr;
};

// Async-signal-safe; loopback must be up.
bool set_up_filtered_network(const FilteredPlan& plan, int channel, StepFailure* failure) noexcept;

}  // namespace chock::sandbox
