#include "util/sha256.hpp"

#include <sha1.h>
#include <sha2.h>

#include <array>
#include <cstdint>

namespace chock {

std::string digest_of(const std::vector<std::string_view>& pieces, std::size_t size) {
  auto bytes = [](std::string_view piece) { return reinterpret_cast<const std::uint8_t*>(piece.data()); };
  if (size == SHA1_DIGEST_LENGTH) {
    SHA1_CTX ctx;
    SHA1Init(&ctx);
    for (const auto piece : pieces) SHA1Update(&ctx, bytes(piece), piece.size());
    std::array<std::uint8_t, SHA1_DIGEST_LENGTH> digest{};
    SHA1Final(digest.data(), &ctx);
    return {reinterpret_cast<const char*>(digest.data()), digest.size()};
  }
  SHA2_CTX ctx;
  SHA256Init(&ctx);
  for (const auto piece : pieces) SHA256Update(&ctx, bytes(piece), piece.size());
  std::array<std::uint8_t, SHA256_DIGEST_LENGTH> digest{};
  SHA256Final(digest.data(), &ctx);
  return {reinterpret_cast<const char*>(digest.data()), digest.size()};
}

std::string sha256_digest(std::string_view bytes) {
  return digest_of({bytes}, SHA256_DIGEST_LENGTH);
}

std::string sha1_digest(std::string_view bytes) {
  return digest_of({bytes}, SHA1_DIGEST_LENGTH);
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
