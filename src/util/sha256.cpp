#include "util/sha256.hpp"

#include <sha2.h>

#include <array>
#include <cstdint>

namespace chock {

std::string sha256_hex(std::string_view bytes) {
  SHA2_CTX ctx;
  SHA256Init(&ctx);
  SHA256Update(&ctx, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256Final(digest.data(), &ctx);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(kSha256HexLength);
  for (std::uint8_t byte : digest) {
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

}  // namespace chock
