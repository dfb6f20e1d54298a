// Running a program that writes `--result FILE` (chock sandbox, limits-run)
// and reading that result back, for the limits suites.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "process.hpp"

namespace chock::test::limits {

struct ResultRun {
  Output out;
  nlohmann::json result;  // null when no result file was written
};

// `PREFIX... --result FILE FLAGS... -- COMMAND...`
ResultRun run_with_result(std::vector<std::string> prefix, const std::vector<std::string>& flags,
                          const std::vector<std::string>& command);
// `chock sandbox --ro STAGE --result FILE FLAGS... -- COMMAND...`
ResultRun chock_sandbox(const std::vector<std::string>& flags, const std::vector<std::string>& command);
// The chock-* cgroups Chock made below `parent`.
std::vector<std::string> chock_children(const std::string& parent);

}  // namespace chock::test::limits
