#include "sandbox/fetcher_confinement.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <set>

#include "sandbox/seccomp.hpp"

namespace chock::sandbox {

namespace {

// OpenSSL looks an issuer up in a CA directory by its hashed name, a link to
// the certificate's own file elsewhere (/usr/share/ca-certificates): Landlock
// judges the file the link leads to, so each of those is granted itself.
// Bounded: a CA directory holds a few hundred.
constexpr std::size_t kMaxCaLinks = 4096;

void add_link_targets(const std::string& dir, std::set<std::string>& files) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::size_t seen = 0;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_type != DT_LNK || ++seen > kMaxCaLinks) continue;
    char real[PATH_MAX];
    struct stat st {};
    if (::realpath((dir + "/" + e->d_name).c_str(), real) != nullptr && ::stat(real, &st) == 0 &&
        S_ISREG(st.st_mode))
      files.insert(real);
  }
  ::closedir(d);
}

bool is_there(const std::string& path) {
  struct stat st {};
  return !path.empty() && path.front() == '/' && ::stat(path.c_str(), &st) == 0;
}

}  // namespace

std::vector<landlock::Rule> fetcher_reads(const std::string& ca_file, const std::string& ca_path) {
  std::set<std::string> files, dirs;
  if (is_there(ca_file)) files.insert(ca_file);
  if (is_there(ca_path)) {
    dirs.insert(ca_path);
    add_link_targets(ca_path, files);
  }
  // Loaded before the confinement, mapped now: read (and run) only those.
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const auto slash = line.find(" /");
    if (slash == std::string::npos || line.ends_with(" (deleted)")) continue;
    const std::string path = line.substr(slash + 1);
    if (is_there(path)) files.insert(path);
  }
  std::vector<landlock::Rule> rules;
  rules.reserve(files.size() + dirs.size());
  for (const auto& f : files) rules.push_back({f, landlock::right::read_file | landlock::right::execute});
  for (const auto& d : dirs) rules.push_back({d, landlock::right::read_file | landlock::right::read_dir});
  return rules;
}

Expected<int> confine_fetcher(const std::string& ca_file, const std::string& ca_path) {
  auto filter = seccomp::fetcher();
  if (!filter) return std::move(filter).error();
  auto landlocked = landlock::confine_fetcher(fetcher_reads(ca_file, ca_path));
  if (!landlocked) return std::move(landlocked).error();
  int error = 0;
  if (!seccomp::install(*filter, &error)) return Error{"confine the fetcher: seccomp", "", error};
  return landlocked->abi;
}

}  // namespace chock::sandbox
