// Whole writes: write(2) may write less than asked, and a signal may
// interrupt it; every caller wants all the bytes or an error.
#pragma once

#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// All of `bytes` to `fd`, retrying after EINTR and short writes; the Error
// names `path` (what the descriptor is) and the errno.
[[nodiscard]] Expected<void> write_all(int fd, std::string_view bytes, const std::string& path);

}  // namespace chock
