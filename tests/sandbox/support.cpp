#include "support.hpp"

namespace chock::test::core {

std::string trim(const std::string& s) {
  auto end = s.find_last_not_of("\r\n ");
  return end == std::string::npos ? "" : s.substr(0, end + 1);
}

// `chock sandbox --ro <stage> ARGS -- CMD...`: the stage holds the probe.
Output sandbox(std::vector<std::string> args, const std::vector<std::string>& command, const RunOptions& o) {
  std::vector<std::string> full{"sandbox", "--ro", test::stage_dir()};
  full.insert(full.end(), args.begin(), args.end());
  full.push_back("--");
  full.insert(full.end(), command.begin(), command.end());
  return test::chock(full, o);
}

Output probe(std::vector<std::string> args, std::vector<std::string> probe_args, const RunOptions& o) {
  std::vector<std::string> cmd{test::program("probe")};
  cmd.insert(cmd.end(), probe_args.begin(), probe_args.end());
  return sandbox(std::move(args), cmd, o);
}

}  // namespace chock::test::core
