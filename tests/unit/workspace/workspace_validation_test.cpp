// The workspace's input checks: every bad value refused with a message that
// names it, every good one let through.
#include <gtest/gtest.h>

#include "chock/workspace.hpp"

namespace chock::workspace {
namespace {

TEST(DenyPath, RefusesWhatIsNotAPlainRelativeFilePath) {
  for (const char* bad :
       {"", "/abs", "../up", "a/../b", "./a", "a//b", "dir/", "*.env", "a?", "[ab]", ".git/x", "a/.git/b"}) {
    auto r = validate_deny_path(bad);
    ASSERT_FALSE(r.has_value()) << bad;
    EXPECT_EQ(r.error().kind, Errc::bad_config);
    EXPECT_NE(r.error().message().find("--deny"), std::string::npos) << r.error().message();
  }
  for (const char* good : {"secret.env", "conf/key.pem", ".env", "a b/c.txt", "..hidden"}) {
    EXPECT_TRUE(validate_deny_path(good).has_value()) << good;
  }
}

TEST(SessionId, OnlySafePathComponents) {
  const std::vector<std::string> bad_ids{"", "-x", "A", "a/b", "..", "a.b", "a b", std::string(65, 'a')};
  for (const auto& bad : bad_ids) {
    EXPECT_FALSE(validate_session_id(bad).has_value()) << bad;
  }
  const std::vector<std::string> good_ids{"abc", "k3f9x2ab", "a-b_c", std::string(64, 'z')};
  for (const auto& good : good_ids) {
    EXPECT_TRUE(validate_session_id(good).has_value()) << good;
  }
}

TEST(ApplyMode, ParsesTheThreeModesOnly) {
  EXPECT_EQ(*parse_mode("merge"), Mode::merge);
  EXPECT_EQ(*parse_mode("rebase"), Mode::rebase);
  EXPECT_EQ(*parse_mode("squash"), Mode::squash);
  EXPECT_FALSE(parse_mode("ff").has_value());
}

}  // namespace
}  // namespace chock::workspace
