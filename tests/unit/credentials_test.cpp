// The credential store's file: mode 0600 and the caller's, a bare token sent
// as a bearer token, nothing that could add a header, and a store someone
// else could read is refused rather than used.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>

#include "net/credentials.hpp"
#include "process.hpp"

namespace chock::net {
namespace {

class Store : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* old = std::getenv("XDG_DATA_HOME")) saved_ = old;
    ::setenv("XDG_DATA_HOME", dir_.path().c_str(), 1);
  }
  void TearDown() override {
    if (saved_.empty())
      ::unsetenv("XDG_DATA_HOME");
    else
      ::setenv("XDG_DATA_HOME", saved_.c_str(), 1);
  }
  static Host host(const char* text) { return *parse_host(text); }
  test::TempDir dir_{"chock-credentials"};
  std::string saved_;
};

TEST_F(Store, KeepsOneSecretAHostInAFileOnlyTheCallerReads) {
  ASSERT_TRUE(set_credential(host("API.Example.org"), "abc123\n"));
  ASSERT_TRUE(set_credential(host("git.example.org"), "token xyz"));
  auto got = credential_for(host("api.example.org"));
  ASSERT_TRUE(got && *got);
  EXPECT_EQ(**got, "Bearer abc123");
  EXPECT_EQ(**credential_for(host("git.example.org")), "token xyz");
  EXPECT_FALSE(*credential_for(host("example.org")));  // exactly that host, not a parent or a child
  EXPECT_EQ(*credential_hosts(), (std::vector<std::string>{"api.example.org", "git.example.org"}));
  struct stat st {};
  ASSERT_EQ(::stat(credentials_path()->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);
  EXPECT_TRUE(*remove_credential(host("api.example.org")));
  EXPECT_FALSE(*remove_credential(host("api.example.org")));
  EXPECT_FALSE(*credential_for(host("api.example.org")));
}

TEST_F(Store, RefusesWhatCouldAddAHeaderAndAStoreOthersCanRead) {
  for (const char* bad : {"a\rb", "a\nX-Evil: 1", "caf\xc3\xa9", ""}) {
    auto r = set_credential(host("api.example.org"), bad);
    EXPECT_FALSE(r) << bad;
  }
  EXPECT_FALSE(set_credential(host("api.example.org"), std::string(kMaxSecretBytes + 1, 'a')));
  ASSERT_TRUE(set_credential(host("api.example.org"), "abc"));
  ASSERT_EQ(::chmod(credentials_path()->c_str(), 0644), 0);
  auto refused = credential_for(host("api.example.org"));
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message().find("mode 0600"), std::string::npos) << refused.error().message();
}

// A store nested 150,000 deep (a person's slip, or a file planted in the
// data directory) is refused in one line, never copied or dumped: each
// recurses once a level.
TEST_F(Store, ADeeplyNestedStoreIsRefusedNotACrash) {
  ASSERT_TRUE(set_credential(host("api.example.org"), "abc"));
  const std::string path = *credentials_path();
  const std::size_t deep = 150000;
  test::write_file(
      path, R"({"api.example.org":"Bearer abc","x":)" + std::string(deep, '[') + std::string(deep, ']') + "}",
      0600);
  const std::string line = "the credential store is JSON nested deeper than 64 levels: " + path;
  auto set = set_credential(host("git.example.org"), "xyz");
  ASSERT_FALSE(set);
  EXPECT_EQ(set.error().message(), line);
  auto got = credential_for(host("api.example.org"));
  ASSERT_FALSE(got);
  EXPECT_EQ(got.error().message(), line);
  // The neighbour: the same store without the nesting is read.
  test::write_file(path, R"({"api.example.org":"Bearer abc","x":[[]]})", 0600);
  EXPECT_EQ(**credential_for(host("api.example.org")), "Bearer abc");
}

}  // namespace
}  // namespace chock::net
