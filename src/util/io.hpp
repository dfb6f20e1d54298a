// Whole reads and writes: read(2) and write(2) may do less than asked, and a
// signal may interrupt them; every caller wants all the bytes or an error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// All of `bytes` to `fd`, retrying after EINTR and short writes; the Error
// names `path` (what the descriptor is) and the errno.
[[nodiscard]] Expected<void> write_all(int fd, std::string_view bytes, const std::string& path);

// Everything `fd` has left to read, retrying after EINTR; EFBIG past
// `max_bytes`. The Error names `path`.
[[nodiscard]] Expected<std::string> read_all(int fd, const std::string& path, std::size_t max_bytes);

}  // namespace chock
