// The credential store's file: mode 0600 and the caller's, a bare token sent
// as a bearer token, nothing that could add a header, and a store someone
// else could read is refused rather than used.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cctype>
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
  EXPECT_EQ((*got)->header, "Authorization");
  EXPECT_EQ((*got)->header_value(), "Bearer abc123");
  EXPECT_EQ((*credential_for(host("git.example.org")))->header_value(), "token xyz");
  EXPECT_FALSE(*credential_for(host("example.org")));            // exactly that host, not a parent or a child
  EXPECT_FALSE(*credential_for(host("api.example.org"), 8443));  // nor another port
  auto all = credentials();
  ASSERT_TRUE(all);
  std::vector<std::string> hosts;
  for (const auto& c : *all) hosts.push_back(c.host);
  EXPECT_EQ(hosts, (std::vector<std::string>{"api.example.org", "git.example.org"}));
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
  // The neighbour: the same store without the nesting is read (a store of
  // the first form, the header's value as a string, still is).
  test::write_file(path, R"({"api.example.org":"Bearer abc","x":[[]]})", 0600);
  EXPECT_EQ((*credential_for(host("api.example.org")))->header_value(), "Bearer abc");
}

// A credential bound to a port, a header and a variable; what would put a
// second header on the wire or a variable that changes how programs load is
// refused.
TEST_F(Store, BindsAHeaderAFormatAPortAndAVariable) {
  CredentialSpec spec;
  spec.port = 8443;
  spec.header = "x-api-key";
  spec.env = "EXAMPLE_API_KEY";
  auto set = set_credential(host("api.example.org"), "sk-ant-api03-0123456789abcdefghij", spec);
  ASSERT_TRUE(set) << set.error().message();
  auto got = credential_for(host("api.example.org"), 8443);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->header, "x-api-key");
  EXPECT_EQ((*got)->header_value(), "sk-ant-api03-0123456789abcdefghij");
  EXPECT_EQ((*got)->env, "EXAMPLE_API_KEY");
  EXPECT_FALSE(*credential_for(host("api.example.org")));  // 443 has none
  CredentialSpec formatted;
  formatted.format = "token {}";
  ASSERT_TRUE(set_credential(host("git.example.org"), "abc", formatted));
  EXPECT_EQ((*credential_for(host("git.example.org")))->header_value(), "token abc");
  for (const char* header : {"X Api", "x-api-key:", "a\r\nb"}) {
    CredentialSpec bad;
    bad.header = header;
    EXPECT_FALSE(set_credential(host("api.example.org"), "sk-0123456789abcdefghij", bad)) << header;
  }
  for (const char* format : {"Bearer", "{} {}", "Bearer {}\r\nX: 1"}) {
    CredentialSpec bad;
    bad.format = format;
    EXPECT_FALSE(set_credential(host("api.example.org"), "sk-0123456789abcdefghij", bad)) << format;
  }
  for (const char* env : {"PATH", "LD_PRELOAD", "CHOCK_X", "1KEY", "A-B", "HOME"}) {
    CredentialSpec bad;
    bad.env = env;
    EXPECT_FALSE(set_credential(host("api.example.org"), "sk-0123456789abcdefghij", bad)) << env;
  }
  CredentialSpec short_one;
  short_one.env = "SHORT_KEY";
  auto too_short = set_credential(host("api.example.org"), "abc", short_one);
  ASSERT_FALSE(too_short);
  EXPECT_NE(too_short.error().message().find("too short"), std::string::npos) << too_short.error().message();
}

// A sentinel has the secret's length and its public prefix, and the rest is
// drawn anew each time from letters and digits.
TEST(Sentinel, HasTheSecretsShapeAndNothingElseOfIt) {
  for (const std::string secret :
       {"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghp_0123456789ABCDEFGHIJabcdefghij",
        "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWX", "0123456789ABCDEFGHIJ"}) {
    auto a = make_sentinel(secret);
    auto b = make_sentinel(secret);
    ASSERT_TRUE(a && b) << secret;
    EXPECT_EQ(a->size(), secret.size());
    const std::size_t prefix = sentinel_prefix(secret);
    EXPECT_EQ(a->substr(0, prefix), secret.substr(0, prefix));
    EXPECT_NE(*a, *b) << "two sentinels alike";
    for (std::size_t i = prefix; i < a->size(); ++i)
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>((*a)[i])));
    EXPECT_EQ(a->substr(prefix).find(secret.substr(prefix, 6)), std::string::npos);
  }
  EXPECT_EQ(sentinel_prefix("sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz"), 13U);
  EXPECT_EQ(sentinel_prefix("ghp_0123456789ABCDEFGHIJabcdefghij"), 4U);
  EXPECT_EQ(sentinel_prefix("0123456789ABCDEFGHIJ"), 0U);
  EXPECT_FALSE(make_sentinel("short"));
}

}  // namespace
}  // namespace chock::net
