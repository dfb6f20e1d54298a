// Which devices a call of the project gets: a device is exposed only when the
// project's .devices names it and a policy rule answers allow for the same
// action (ask is a refusal: nobody is asked for a device mid-call). Each is
// found anew (USB by its identity in sysfs) at the start of the call.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/layers.hpp"

namespace chock::session {

struct DeviceGrants {
  std::vector<std::string> nodes;       // for Config::devices
  std::vector<std::string> lines;       // one a device, exposed or kept out, and why
  std::vector<nlohmann::json> exposed;  // device.exposed events: action, node, major:minor, mode, owner
};

[[nodiscard]] DeviceGrants grant_devices(const config::Layers& layers, bool root_caller);

}  // namespace chock::session
