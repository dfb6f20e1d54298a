// SHA-256 of a byte string, as the session log chains its lines and names
// the configuration a session ran with.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace chock {

inline constexpr std::size_t kSha256HexLength = 64;

// The digest as 64 lower-case hex characters.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);

}  // namespace chock
