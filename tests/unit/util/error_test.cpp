#include <gtest/gtest.h>

#include <cerrno>

#include "chock/error.hpp"

namespace chock {
namespace {

TEST(Error, MessageNamesWhatPathAndErrno) {
  Error e{"open bind source", "/srv/x", ENOENT};
  EXPECT_EQ(e.message(), "open bind source: /srv/x: ENOENT (No such file or directory)");
}

TEST(Error, MessageWithoutErrnoOrPath) {
  Error e{"--ro needs an absolute path", "", 0};
  EXPECT_EQ(e.message(), "--ro needs an absolute path");
}

TEST(Error, ErrnoNames) {
  EXPECT_STREQ(errno_name(EPERM), "EPERM");
  EXPECT_STREQ(errno_name(ENETUNREACH), "ENETUNREACH");
}

TEST(Expected, HoldsValueOrError) {
  Expected<int> good = 3;
  ASSERT_TRUE(good);
  EXPECT_EQ(*good, 3);
  Expected<int> bad = Error{"x", "", EINVAL};
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, EINVAL);
  Expected<void> ok;
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace chock
