// SHA-256 of a byte string, as the session log chains its lines and names
// the configuration a session ran with; SHA-1 and SHA-256 digests as git
// ends its files with them.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace chock {

inline constexpr std::size_t kSha256HexLength = 64;

// The digest as 64 lower-case hex characters.
[[nodiscard]] std::string sha256_hex(std::string_view bytes);
// The digests themselves (32 and 20 bytes): a git file's trailer is one.
[[nodiscard]] std::string sha256_digest(std::string_view bytes);
[[nodiscard]] std::string sha1_digest(std::string_view bytes);
// The digest of `pieces` one after the other: SHA-1 where `size` is 20,
// else SHA-256 (32 bytes).
[[nodiscard]] std::string digest_of(const std::vector<std::string_view>& pieces, std::size_t size);

}  // namespace chock
