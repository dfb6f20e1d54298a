#include "result_run.hpp"

#include <dirent.h>

namespace chock::test::limits {

ResultRun run_with_result(std::vector<std::string> argv, const std::vector<std::string>& flags,
                          const std::vector<std::string>& command) {
  TempDir dir("chock-limits");
  std::string file = dir / "result.json";
  argv.insert(argv.end(), {"--result", file});
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.emplace_back("--");
  argv.insert(argv.end(), command.begin(), command.end());
  ResultRun r;
  r.out = run_process(argv);
  if (exists(file)) r.result = nlohmann::json::parse(read_file(file));
  return r;
}

ResultRun chock_sandbox(const std::vector<std::string>& flags, const std::vector<std::string>& command) {
  return run_with_result({chock_binary(), "sandbox", "--ro", stage_dir()}, flags, command);
}

std::vector<std::string> chock_children(const std::string& parent) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(parent.c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::string(e->d_name).rfind("chock-", 0) == 0) out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

}  // namespace chock::test::limits
