// What `chock mcp --http` takes from the command line and from each
// request's headers before anything is served (mcp/http_transport.hpp).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "mcp/http_transport.hpp"
#include "process.hpp"

namespace chock::mcp {
namespace {

TEST(McpHttpListen, OnlyTheLoopbackIsTaken) {
  for (const auto& [spec, address, port] :
       std::vector<std::tuple<std::string, std::string, int>>{{"8931", "127.0.0.1", 8931},
                                                              {"127.0.0.1:0", "127.0.0.1", 0},
                                                              {"localhost:80", "localhost", 80},
                                                              {"[::1]:65535", "::1", 65535}}) {
    auto p = parse_listen(spec);
    ASSERT_TRUE(p) << spec;
    EXPECT_EQ(p->first, address) << spec;
    EXPECT_EQ(p->second, port) << spec;
  }
  for (const char* bad : {"0.0.0.0:80", "[::]:80", "192.0.2.1:80", "127.0.0.2:80", "example.org:80",
                          "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:8o", ":80x", ""})
    EXPECT_FALSE(parse_listen(bad)) << bad;
}

TEST(McpHttpHeaders, AHostOrOriginIsTheLoopbacksOrRefused) {
  for (const char* host : {"127.0.0.1", "127.0.0.1:8931", "localhost", "LOCALHOST:1", "[::1]", "[::1]:443"})
    EXPECT_TRUE(loopback_host(host)) << host;
  for (const char* host :
       {"", "evil.example", "127.0.0.1.evil.example", "localhost.evil.example", "127.0.0.1:80:80",
        "127.0.0.1:", "127.0.0.1:1234567", "[::1]x", "127.0.0.10", "localhost@evil.example", "0x7f000001"})
    EXPECT_FALSE(loopback_host(host)) << host;
  for (const char* origin : {"http://localhost:3000", "https://127.0.0.1", "http://[::1]:8931"})
    EXPECT_TRUE(loopback_origin(origin)) << origin;
  for (const char* origin : {"null", "http://evil.example", "http://localhost.evil.example", "file://",
                             "http://localhost/path", "ws://localhost", "http://127.0.0.1:80@evil.example"})
    EXPECT_FALSE(loopback_origin(origin)) << origin;
}

TEST(McpHttpToken, OnlyAFileOfItsOwnersWithALongTokenIsRead) {
  test::TempDir dir;
  const std::string path = dir.path() + "/token";
  auto write = [&](const std::string& text, mode_t mode) {
    std::ofstream(path, std::ios::trunc) << text;
    ::chmod(path.c_str(), mode);
  };
  write("0123456789abcdef0123\nsecond line\n", 0600);
  auto t = read_token(path);
  ASSERT_TRUE(t) << t.error().message();
  EXPECT_EQ(*t, "0123456789abcdef0123");
  write("0123456789abcdef0123\n", 0640);
  EXPECT_FALSE(read_token(path));
  write("short\n", 0600);
  EXPECT_FALSE(read_token(path));
  write("0123456789 abcdef0123\n", 0600);
  EXPECT_FALSE(read_token(path));
  EXPECT_FALSE(read_token(dir.path() + "/absent"));
  const std::string link = dir.path() + "/link";
  write("0123456789abcdef0123\n", 0600);
  ASSERT_EQ(::symlink(path.c_str(), link.c_str()), 0);
  EXPECT_FALSE(read_token(link));  // not followed
}

}  // namespace
}  // namespace chock::mcp
