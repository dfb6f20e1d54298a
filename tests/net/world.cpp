#include "world.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace chock::test {

std::string world_dir() {
  const char* w = std::getenv("CHOCK_WORLD");
  return w != nullptr ? w : "";
}

int dns_queries(const std::string& name) {
  std::ifstream in(world_dir() + "/dns.log");
  int count = 0;
  for (std::string line; std::getline(in, line);)
    if (line.rfind(name + " ", 0) == 0) ++count;
  return count;
}

std::vector<std::string> http_locals() {
  std::ifstream in(world_dir() + "/http.log");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object()) out.push_back(j.value("local", ""));
  }
  return out;
}

NetProject::NetProject(const Rules& rules) : dir_("chock-net-project") {
  std::ostringstream zon;
  zon << ".{\n    .policy = .{ .rules = .{\n";
  for (const auto& [action, decision] : rules)
    zon << "        .{ .action = \"" << action << "\", .decision = ." << decision << " },\n";
  zon << "    } },\n}\n";
  write_file(dir_ / "chock.zon", zon.str());
}

Output NetProject::fetch(const std::vector<std::string>& args, const RunOptions& options) const {
  std::vector<std::string> all{"fetch", "--project", path()};
  all.insert(all.end(), args.begin(), args.end());
  return chock(all, options);
}

}  // namespace chock::test
