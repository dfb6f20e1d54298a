#include "bases_support.hpp"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <sstream>

namespace chock::test::ws {

BaseDir bases_of(const Fixture& f) {
  BaseDir out;
  DIR* d = ::opendir((f.data() + "/chock/bases").c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name.ends_with(".lock") || name.ends_with(".size") ||
        name.find(".last") != std::string::npos)
      continue;
    (name.rfind(".tmp.", 0) == 0 ? out.leftovers : out.bases).push_back(name);
  }
  ::closedir(d);
  std::sort(out.bases.begin(), out.bases.end());
  return out;
}

std::string base_dir(const Fixture& f, const std::string& name) {
  return f.data() + "/chock/bases/" + name;
}

void many_files(Fixture& f, int count, std::size_t bytes) {
  for (int i = 0; i < count; ++i) {
    const std::string dir = f.file("m" + std::to_string(i % 10));
    ::mkdir(dir.c_str(), 0755);
    write_file(dir + "/f" + std::to_string(i), std::string(bytes, static_cast<char>('a' + i % 26)));
  }
  f.commit_all("many");
}

std::string other_base(const Fixture& f, const std::string& older) {
  const auto bases = bases_of(f).bases;
  return bases.front() == older ? bases.back() : bases.front();
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(l);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace chock::test::ws
