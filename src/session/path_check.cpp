#include "session/path_check.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "util/split.hpp"

namespace chock::session {

namespace {

bool under(const std::string& path, const std::string& dir) {
  return path == dir ||
         (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_program(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::vector<std::string> entries(const std::string& path) {
  return split_nonempty(path, ':');
}

}  // namespace

PathReport check_path(const std::string& path, const Config& config) {
  // The toolchain every call has (mount_tree.cpp) and what this call binds.
  // (The call's /tmp is a fresh tmpfs: a host directory there is not inside.)
  std::vector<std::string> inside = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"};
  if (config.store_paths) {  // a Nix dev shell's closure instead of the host's
    inside = {"/etc"};
    inside.insert(inside.end(), config.store_paths->begin(), config.store_paths->end());
  }
  for (const auto& b : config.binds) inside.push_back(b.target.empty() ? b.source : b.target);
  for (const auto& o : config.overlays) inside.push_back(o.target);
  auto has = [&](const std::string& dir) {
    for (const auto& i : inside)
      if (under(dir, i)) return true;
    return false;
  };
  PathReport report;
  std::string outside_hit, inside_hit;
  const std::string command = config.argv.empty() ? std::string() : config.argv.front();
  const bool look_up = !command.empty() && command.find('/') == std::string::npos;
  for (const auto& e : entries(path)) {
    const bool there = e.front() == '/' && has(e);
    if (!there && is_dir(e) &&
        std::find(report.absent.begin(), report.absent.end(), e) == report.absent.end())
      report.absent.push_back(e);
    if (!look_up) continue;
    std::string candidate = e;
    candidate.append("/").append(command);
    if (!is_program(candidate)) continue;
    if (outside_hit.empty()) outside_hit = candidate;
    if (there && inside_hit.empty()) inside_hit = candidate;
  }
  if (!outside_hit.empty() && outside_hit != inside_hit)
    report.command_line =
        "`" + command + "` is " + outside_hit + " outside, which the sandbox does not have; " +
        (inside_hit.empty() ? std::string("inside it is not found")
                            : "inside it is " + inside_hit + ", another program") +
        " (an operator binds toolchains with .toolchain_paths in ~/.config/chock/config.zon)";
  return report;
}

}  // namespace chock::session
