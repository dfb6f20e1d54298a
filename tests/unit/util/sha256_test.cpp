// SHA-256 and SHA-1 against the FIPS 180-2 examples.
#include <gtest/gtest.h>

#include <string>

#include "util/sha256.hpp"

namespace chock {
namespace {

TEST(Sha256, FipsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, HashesEmbeddedNulBytes) {
  EXPECT_NE(sha256_hex(std::string("a\0b", 3)), sha256_hex("a"));
  EXPECT_EQ(sha256_hex(std::string("a\0b", 3)).size(), kSha256HexLength);
}

// The raw digests, as a git file's trailer holds them.
std::string hex(const std::string& bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    out += kHex[static_cast<unsigned char>(c) >> 4];
    out += kHex[static_cast<unsigned char>(c) & 0xf];
  }
  return out;
}

TEST(Digest, Sha1AndSha256FipsTestVectors) {
  EXPECT_EQ(hex(sha1_digest("abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
  EXPECT_EQ(hex(sha1_digest("")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
  EXPECT_EQ(hex(sha256_digest("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha1_digest("abc").size(), 20U);
  EXPECT_EQ(sha256_digest("abc").size(), 32U);
}

}  // namespace
}  // namespace chock
