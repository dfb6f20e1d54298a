#include "session/device_grants.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cstdio>

#include "devices/identify.hpp"

namespace chock::session {

namespace {

std::string allow_rule(const std::string& action) {
  return ".{ .action = \"" + action + "\", .decision = .allow }";
}

}  // namespace

DeviceGrants grant_devices(const config::Layers& layers, bool root_caller) {
  DeviceGrants g;
  const auto& named = layers.project.devices;
  for (const auto& entry : named) {
    const policy::Answer a = layers.table.decide(entry.action);
    const std::string head = "device " + entry.action + " is not exposed (named at " + entry.origin + "): ";
    if (a.decision == policy::Decision::deny) {
      g.lines.push_back(head + "the policy denies it" +
                        (a.deciding_rule ? " (" + a.deciding_rule->origin + ")" : std::string()));
      continue;
    }
    if (a.decision == policy::Decision::ask) {
      g.lines.push_back(head + "no rule allows it, and a device is not asked for mid-call: " +
                        allow_rule(entry.action) + " in the policy lets it through");
      continue;
    }
    auto name = devices::parse_action(entry.action);
    auto node = name ? devices::find_node(*name) : Expected<std::string>(name.error());
    if (!node) {
      g.lines.push_back(head + node.error().message());
      continue;
    }
    struct stat st {};
    if (::lstat(node->c_str(), &st) != 0) {
      g.lines.push_back(head + *node + " is not there");
      continue;
    }
    if (!S_ISCHR(st.st_mode)) {
      g.lines.push_back(head + *node +
                        (S_ISBLK(st.st_mode) ? " is a block device: a disk is never passed through"
                                             : " is not a character device node"));
      continue;
    }
    char numbers[32], mode[8];
    std::snprintf(numbers, sizeof numbers, "%u:%u", major(st.st_rdev), minor(st.st_rdev));
    std::snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    g.nodes.push_back(*node);
    g.exposed.push_back({{"action", entry.action},
                         {"node", *node},
                         {"major_minor", numbers},
                         {"mode", mode},
                         {"owner", std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid)}});
    g.lines.push_back("device " + entry.action + " exposed: " + *node + " (character " + numbers + ", mode " +
                      mode + ", owner " + std::to_string(st.st_uid) + ":" + std::to_string(st.st_gid) +
                      "), the whole device: every operation its driver answers to; the call opens it " +
                      (root_caller ? "as uid 65534, so only if the node's mode lets anyone"
                                   : "as you, under the node's own mode"));
  }
  // A rule that allows a device the project does not name exposes nothing: both blocks must agree.
  for (const auto& e : layers.table.entries()) {
    const auto& r = e.rule;
    if (r.decision != policy::Decision::allow || !r.action.starts_with("device.") || r.action.ends_with("*"))
      continue;
    if (std::none_of(named.begin(), named.end(),
                     [&](const config::DeviceEntry& d) { return d.action == r.action; }))
      g.lines.push_back("device " + r.action + " is not exposed: the rule at " + r.origin +
                        " allows it, but .devices in chock.zon does not name it (both must)");
  }
  return g;
}

}  // namespace chock::session
