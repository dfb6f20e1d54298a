// The credential store against the test internet: `chock fetch` sends the
// stored Authorization header to exactly its host over https, never over
// http, never on a redirect to another host, and the secret is in no log.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "log/session_log.hpp"
#include "world.hpp"

namespace chock::test {
namespace {

constexpr const char* kSecret = "token s3cret-credential-value";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string logged_session(const Output& out) {
  const std::string mark = "chock: fetch logged as session ";
  const auto at = out.err.find(mark);
  return at == std::string::npos ? "" : out.err.substr(at + mark.size(), 8);
}

TEST(Credentials, OnlyAnHttpsFetchOfItsOwnHostCarriesIt) {
  CHOCK_NEED_WORLD();
  CHOCK_NEED_TLS();
  NetProject p(Rules{{"net.fetch.test.chock.www", "allow"}, {"net.fetch.test.chock.other", "allow"}});
  RunOptions typed;
  typed.stdin_data = std::string(kSecret) + "\n";
  auto set = chock({"credentials", "set", "www.chock.test"}, typed);
  ASSERT_EQ(set.status, 0) << set.err;
  EXPECT_FALSE(has(set.out + set.err, "s3cret")) << set.out << set.err;
  auto list = chock({"credentials", "list"});
  EXPECT_EQ(list.out, "www.chock.test  Authorization: {}\n");
  const char* data = std::getenv("XDG_DATA_HOME");
  ASSERT_NE(data, nullptr);
  struct stat st {};
  ASSERT_EQ(::stat((std::string(data) + "/chock/credentials.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600U);

  auto tls = p.fetch({"https://www.chock.test/headers"});
  EXPECT_EQ(tls.status, 0) << tls.err;
  EXPECT_TRUE(has(tls.out, std::string("Authorization: ") + kSecret + "\n")) << tls.out;
  auto plain = p.fetch({"http://www.chock.test/headers"});
  EXPECT_EQ(plain.status, 0) << plain.err;
  EXPECT_FALSE(has(plain.out, "Authorization")) << plain.out;
  auto moved = p.fetch({"https://www.chock.test/to?u=https://other.chock.test/headers"});
  EXPECT_EQ(moved.status, 0) << moved.err;
  EXPECT_TRUE(has(moved.out, "Host: other.chock.test")) << moved.out;
  EXPECT_FALSE(has(moved.out, "Authorization")) << moved.out;

  // The log says a credential was used, and for which host; never its value.
  auto path = log::find_log(logged_session(tls));
  ASSERT_TRUE(path) << path.error().message();
  const std::string log = read_file(*path);
  EXPECT_TRUE(has(log, "\"credential\":\"www.chock.test\"")) << log;
  EXPECT_FALSE(has(log, "s3cret")) << log;
  auto removed = chock({"credentials", "remove", "www.chock.test"});
  EXPECT_EQ(removed.status, 0) << removed.err;
  auto after = p.fetch({"https://www.chock.test/headers"});
  EXPECT_FALSE(has(after.out, "Authorization")) << after.out;
}

// A credential bound to a header of its own (an API key's x-api-key) is sent
// in that header, formatted as stored, and in no Authorization header.
TEST(Credentials, ACredentialsOwnHeaderAndFormatAreWhatTheFetchSends) {
  CHOCK_NEED_WORLD();
  CHOCK_NEED_TLS();
  NetProject p(Rules{{"net.fetch.test.chock.www", "allow"}});
  RunOptions typed;
  typed.stdin_data = "s3cret-api-key-0123456789\n";
  auto set =
      chock({"credentials", "set", "www.chock.test", "--header", "X-Api-Key", "--format", "key={}"}, typed);
  ASSERT_EQ(set.status, 0) << set.err;
  auto list = chock({"credentials", "list"});
  EXPECT_EQ(list.out, "www.chock.test  X-Api-Key: key={}\n");
  auto tls = p.fetch({"https://www.chock.test/headers"});
  EXPECT_EQ(tls.status, 0) << tls.err;
  EXPECT_TRUE(has(tls.out, "X-Api-Key: key=s3cret-api-key-0123456789\n")) << tls.out;
  EXPECT_FALSE(has(tls.out, "Authorization")) << tls.out;
  // Bound to 443: the same host on another port gets nothing.
  typed.stdin_data = "other-port-secret-0123456789\n";
  ASSERT_EQ(chock({"credentials", "set", "www.chock.test", "--port", "8443"}, typed).status, 0);
  auto again = p.fetch({"https://www.chock.test/headers"});
  EXPECT_FALSE(has(again.out, "other-port-secret")) << again.out;
  EXPECT_EQ(chock({"credentials", "remove", "www.chock.test"}).status, 0);
  EXPECT_EQ(chock({"credentials", "list"}).out, "");
}

TEST(Credentials, ASecretThatWouldAddAHeaderIsRefused) {
  RunOptions typed;
  typed.stdin_data = std::string("Bearer abc\rX-Injected: 1\n");
  auto set = chock({"credentials", "set", "www.chock.test"}, typed);
  EXPECT_EQ(set.status, 2);
  EXPECT_TRUE(has(set.err, "control or non-ASCII byte")) << set.err;
  typed.stdin_data = "";
  auto empty = chock({"credentials", "set", "www.chock.test"}, typed);
  EXPECT_EQ(empty.status, 2);
  EXPECT_TRUE(has(empty.err, "no secret was given on stdin")) << empty.err;
  auto bad_host = chock({"credentials", "set", "not a host"}, typed);
  EXPECT_EQ(bad_host.status, 2) << bad_host.err;
}

}  // namespace
}  // namespace chock::test
