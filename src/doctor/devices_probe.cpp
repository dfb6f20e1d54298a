// The "device passthrough" row: Linux binds a named device into a call; the
// row lists what the project's .devices names, whether each is plugged in
// (found now, as a call finds it) and whether a rule lets it through.
#include <sys/stat.h>

#include "chock/sandbox.hpp"
#include "config/layers.hpp"
#include "devices/identify.hpp"
#include "doctor/probes.hpp"

namespace chock::doctor {

Row device_row(const Options& options, const std::string& project_root) {
  Row row;
  row.name = "device passthrough";
  row.blocks = false;
  if (!expresses().device_passthrough)
    return make_row(row.name, Level::off, false, "not on this system: device passthrough is Linux's alone");
  config::LayerOptions lo;
  lo.project_dir = project_root;
  lo.org_bundle = options.org_bundle;
  lo.policy_rules = options.policy_rules;
  auto layers = config::load_layers(lo);
  if (!layers) return make_row(row.name, Level::degraded, false, layers.error().message());
  std::string reason =
      "yes (Linux): a device named in .devices and allowed by a rule is bound into each call";
  Level level = Level::ok;
  if (layers->project.devices.empty()) reason += "; this project names none";
  for (const auto& d : layers->project.devices) {
    const policy::Answer a = layers->table.decide(d.action);
    auto name = devices::parse_action(d.action);
    auto node = name ? devices::find_node(*name) : Expected<std::string>(name.error());
    struct stat st {};
    const bool present = node && ::stat(node->c_str(), &st) == 0 && S_ISCHR(st.st_mode);
    const bool allowed = a.decision == policy::Decision::allow;
    reason += "; " + d.action + ": " + (present ? *node : std::string("not present")) + ", " +
              (allowed ? "allowed" : std::string("not allowed (") + policy::decision_name(a.decision) + ")");
    if (!present || !allowed) level = Level::degraded;
  }
  return make_row(row.name, level, false, reason);
}

}  // namespace chock::doctor
