#include <gtest/gtest.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <string>

#include "util/passwd.hpp"

namespace chock {
namespace {

// The test binary is linked dynamically, so glibc's own getpwuid (files
// only, on the machines the tests run on) is the reference.
TEST(Passwd, EntryMatchesTheSystemsAnswerForRootAndThisUser) {
  for (uid_t uid : {static_cast<uid_t>(0), ::getuid()}) {
    passwd* pw = ::getpwuid(uid);
    ASSERT_NE(pw, nullptr) << uid;
    auto entry = passwd_entry(uid);
    ASSERT_TRUE(entry.has_value()) << uid;
    EXPECT_EQ(entry->gid, pw->pw_gid);
    EXPECT_EQ(entry->home, pw->pw_dir);
  }
}

TEST(Passwd, AUidWithNoLineHasNoEntry) {
  EXPECT_FALSE(passwd_entry(4000000000U).has_value());
}

TEST(Passwd, HomeIsHomeWhenAbsoluteElseThePasswdLine) {
  const char* saved = std::getenv("HOME");
  std::string keep = saved != nullptr ? saved : "";
  ::setenv("HOME", "/some/where", 1);
  EXPECT_EQ(home_directory(), "/some/where");
  ::setenv("HOME", "relative", 1);
  EXPECT_EQ(home_directory(), ::getpwuid(::getuid())->pw_dir);
  ::unsetenv("HOME");
  EXPECT_EQ(home_directory(), ::getpwuid(::getuid())->pw_dir);
  if (saved != nullptr) ::setenv("HOME", keep.c_str(), 1);
}

}  // namespace
}  // namespace chock
