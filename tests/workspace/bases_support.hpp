// What the shared-base tests read of <data>/chock/bases, and the projects
// they make (issue 24).
#pragma once

#include <string>
#include <vector>

#include "support.hpp"

namespace chock::test::ws {

// The entries of <data>/chock/bases: complete bases and leftovers (".tmp.");
// locks, sizes and the last-base links (and their leftovers) are left out.
struct BaseDir {
  std::vector<std::string> bases, leftovers;
};
BaseDir bases_of(const Fixture& f);
std::string base_dir(const Fixture& f, const std::string& name);
// `count` files of `bytes` bytes each in 10 directories, committed.
void many_files(Fixture& f, int count, std::size_t bytes);
// The base of `f` that is not `older`, where there are two.
std::string other_base(const Fixture& f, const std::string& older);
// The non-empty lines of `text`, sorted.
std::vector<std::string> lines(const std::string& text);

}  // namespace chock::test::ws
