// The size of a directory as its file system counts it, for a DirectoryCap
// (chock/config.hpp): every block of every file and directory below it, links
// not followed, other file systems not entered.
#pragma once

#include <cstdint>
#include <string>

namespace chock::sandbox {

[[nodiscard]] std::uint64_t directory_bytes(const std::string& path);

}  // namespace chock::sandbox
