// Reading an overlay session's upper layer: what changed, was added, was
// deleted, and what cannot be carried back.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "chock/workspace.hpp"

namespace chock::workspace::overlay_scan {

struct Changes {
  std::vector<std::string> changed, added, deleted;
  std::vector<std::pair<std::string, std::string>> skipped;  // path, why
  [[nodiscard]] std::size_t count() const { return changed.size() + added.size() + deleted.size(); }
};

Changes scan(const Session& s);

}  // namespace chock::workspace::overlay_scan
