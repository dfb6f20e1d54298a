// URLs as `chock fetch` reads them, and pages as --text shows them.
#include <gtest/gtest.h>

#include "chock/net.hpp"
#include "fetch/html_text.hpp"

namespace chock::net {
namespace {

TEST(Url, IsRebuiltFromItsPartsWithTheFragmentDropped) {
  auto u = parse_url("HTTPS://API.GitHub.com:443/repos?a=b#frag");
  ASSERT_TRUE(u) << u.error().message();
  EXPECT_EQ(u->scheme, "https");
  EXPECT_EQ(u->host.text, "api.github.com");
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/repos?a=b");
  EXPECT_EQ(u->text(), "https://api.github.com/repos?a=b");
  auto v6 = parse_url("http://[2001:db8::1]:8080?x");
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->text(), "http://[2001:db8::1]:8080/?x");
  EXPECT_EQ(fetch_action(v6->host), "net.fetch.ip6.2001.0db8.0000.0000.0000.0000.0000.0001");
}

TEST(Url, WhatTwoParsersCouldReadDifferentlyIsRefused) {
  const std::pair<const char*, const char*> cases[] = {
      {"ftp://example.org/", "the scheme ftp"},
      {"file:///etc/passwd", "the scheme file"},
      {"http://user:pw@example.org/", "a user or password"},
      {"http://example.org@evil.test/", "a user or password"},
      {"http://example.org\\@evil.test/", "a backslash"},
      {"http://exa mple.org/", "a space"},
      {"http://%65vil.test/", "a percent-encoded host"},
      {"http://example.org:0/", "a port is 1 to 65535"},
      {"http://example.org:65536/", "a port is 1 to 65535"},
      {"http://example.org:/", "an empty port"},
      {"http://[2001:db8::1/", "without its ']'"},
      {"http://0x7f.1/", "a numeric form"},
      {"http:///path", "no host"},
      {"example.org/path", "no scheme"},
      {"http://h\xc3\xa9.test/", "non-ASCII"},
  };
  for (const auto& [url, why] : cases) {
    auto u = parse_url(url);
    ASSERT_FALSE(u) << url;
    EXPECT_NE(u.error().message().find(why), std::string::npos) << url << ": " << u.error().message();
  }
}

TEST(HtmlText, ShowsWhatAPersonSeesAndNothingElse) {
  const std::string page =
      "<html><head><title>T</title><script>alert('x')</script><style>p{}</style></head><body>"
      "<h1>One</h1><p>a  b\n c</p><!-- hidden --><template>t</template><ol><li>x</li></ol>"
      "<p>\xe2\x80\xae"
      "evil\x1b[31m</p></body></html>";
  EXPECT_EQ(fetch::html_to_text(page), "T\nOne\na b c\n- x\nevil[31m\n");
}

TEST(HtmlText, StripsControlsAndReplacesBytesThatAreNotUtf8) {
  EXPECT_EQ(fetch::strip_controls("a\tb\nc\rd\x7f"
                                  "e\x01"),
            "a\tb\ncde");
  EXPECT_EQ(fetch::strip_controls("\xc2\x9b"
                                  "x"),
            "x");  // C1 CSI
  EXPECT_EQ(fetch::strip_controls("\xe2\x81\xa6"
                                  "y"),
            "y");  // a bidi isolate
  EXPECT_EQ(fetch::strip_controls("\xff"
                                  "z"),
            "\xef\xbf\xbd"
            "z");                                                            // not UTF-8
  EXPECT_EQ(fetch::strip_controls("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  EXPECT_EQ(fetch::strip_controls("caf\xc3\xa9"), "caf\xc3\xa9");
}

}  // namespace
}  // namespace chock::net
