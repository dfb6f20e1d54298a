#include "util/sha256.hpp"

#include <nettle/sha2.h>

#include <array>
#include <cstdint>

namespace chock {

std::string sha256_hex(std::string_view bytes) {
  sha256_ctx ctx{};
  sha256_init(&ctx);
  sha256_update(&ctx, bytes.size(), reinterpret_cast<const std::uint8_t*>(bytes.data()));
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> digest{};
  sha256_digest(&ctx, digest.size(), digest.data());
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
