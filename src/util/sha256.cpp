#include "util/sha256.hpp"

#include <sha1.h>
#include <sha2.h>

#include <array>
#include <cstdint>

#include "util/hex.hpp"

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
  return hex_of(sha256_digest(bytes));
}

}  // namespace chock
