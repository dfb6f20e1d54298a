// What the sandbox core's suites share: `chock sandbox` with the stage
// (where the probe program is) bound read-only, and the probe itself.
#pragma once

#include <string>
#include <vector>

#include "process.hpp"

namespace chock::test::core {

using test::Output;
using test::RunOptions;

// The text without trailing newlines and spaces.
std::string trim(const std::string& s);
// `chock sandbox --ro <stage> ARGS -- CMD...`.
Output sandbox(std::vector<std::string> args, const std::vector<std::string>& command,
               const RunOptions& o = {});
// `chock sandbox --ro <stage> ARGS -- probe PROBE_ARGS...`.
Output probe(std::vector<std::string> args, std::vector<std::string> probe_args, const RunOptions& o = {});

}  // namespace chock::test::core
