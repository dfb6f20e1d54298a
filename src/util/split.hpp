// A string's non-empty parts between separators: PATH's entries, a path's names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace chock {

inline std::vector<std::string> split_nonempty(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find(separator, begin);
    if (end == std::string_view::npos) end = text.size();
    if (end > begin) parts.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return parts;
}

// A program's output as lines: empty ones dropped, and of a line a terminal
// rewrote ("\r" progress), only what was left last.
inline std::vector<std::string> output_lines(std::string_view text) {
  std::vector<std::string> lines;
  for (auto& line : split_nonempty(text, '\n')) {
    if (const std::size_t cr = line.rfind('\r'); cr != std::string::npos) line.erase(0, cr + 1);
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

}  // namespace chock
