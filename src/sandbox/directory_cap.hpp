// The size of a directory as its file system counts it, for a DirectoryCap
// (chock/config.hpp): every block of every file and directory below it, links
// not followed, other file systems not entered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace chock::sandbox {

[[nodiscard]] std::uint64_t directory_bytes(const std::string& path);

// A count of a directory kept between calls (DirectoryCap::record): its
// bytes, its file system's use when counted, and when (unix seconds).
struct DirectoryCount {
  std::uint64_t bytes = 0;
  std::uint64_t fs_used = 0;
  std::int64_t at = 0;
};
// Older than this, or taken when its file system held more than now (a
// removal elsewhere could hide the directory's growth), a count is taken again.
inline constexpr std::int64_t kDirectoryCountMaxAgeSeconds = 300;
[[nodiscard]] std::optional<DirectoryCount> read_directory_count(const std::string& record);
// Best effort: a count not kept (or torn by two calls at once) is only taken again.
void keep_directory_count(const std::string& record, const DirectoryCount& count);

}  // namespace chock::sandbox
