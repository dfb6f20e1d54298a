#include "util/sha256.hpp"

#include <sha1.h>
#include <sha2.h>

#include <array>
#include <cstdint>

namespace chock {

std::string sha256_digest(std::string_view bytes) {
  SHA2_CTX ctx;
  SHA256Init(&ctx);
  SHA256Update(&ctx, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256Final(digest.data(), &ctx);
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::string sha1_digest(std::string_view bytes) {
  SHA1_CTX ctx;
  SHA1Init(&ctx);
  SHA1Update(&ctx, reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  std::array<std::uint8_t, SHA1_DIGEST_LENGTH> digest{};
  SHA1Final(digest.data(), &ctx);
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::string sha256_hex(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(kSha256HexLength);
  for (const char c : sha256_digest(bytes)) {
    const auto byte = static_cast<std::uint8_t>(c);
    out += kHex[byte >> 4];
    out += kHex[byte & 0xf];
  }
  return out;
}

}  // namespace chock
