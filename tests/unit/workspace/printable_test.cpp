#include <gtest/gtest.h>

#include "chock/error.hpp"
#include "util/escape.hpp"
#include "workspace/build.hpp"

namespace chock {
namespace {

TEST(Escape, ControlCharactersBecomeVisible) {
  EXPECT_EQ(printable("a\x1b]52;c;aGk=\x07z"), "a\\x1b]52;c;aGk=\\x07z");
  EXPECT_EQ(printable("line\nforged\tx\r"), "line\\nforged\\tx\\r");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(printable("del\x7f"), "del\\x7f");
}

TEST(Escape, C1ControlsBidiOverridesAndBrokenUtf8AreEscaped) {
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\u009b31m");  // 8-bit CSI
  EXPECT_EQ(printable("a\xe2\x80\xae"
                      "cba"),
            "a\\u202ecba");                                 // right-to-left override
  EXPECT_EQ(printable("x\xe2\x80\xa8y"), "x\\u2028y");      // line separator
  EXPECT_EQ(printable("\xff\xc0\xaf"), "\\xff\\xc0\\xaf");  // not UTF-8, overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a surrogate
  EXPECT_EQ(printable("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82"),
            "caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82");
}

TEST(Escape, PrintableIsStableAndUnambiguousEscapesBackslashes) {
  std::string once = printable("a\\x1b\x1b");
  EXPECT_EQ(once, "a\\x1b\\x1b");  // a typed "\x1b" and a real ESC look alike on a terminal...
  EXPECT_EQ(printable(once), once);
  EXPECT_EQ(unambiguous("a\\x1b\x1b"), "a\\\\x1b\\x1b");  // ...but not in a list a program reads
}

TEST(Escape, ErrorMessagesNeverCarryControlCharacters) {
  Error e{"open", "/w/objects/ab/\x1b]0;pwned\x07\nchock: applied", ENOENT};
  EXPECT_EQ(e.message(),
            "open: /w/objects/ab/\\x1b]0;pwned\\x07\\nchock: applied: ENOENT (No such file or directory)");
}

TEST(UrlWithoutSecrets, UserinfoQueryAndFragmentGo) {
  using workspace::build::url_without_secrets;
  EXPECT_EQ(url_without_secrets("https://x-access-token:ghs_abc@github.com/o/r.git"),
            "https://github.com/o/r.git");
  EXPECT_EQ(url_without_secrets("https://user@example.com:8443/r?token=abc#frag"),
            "https://example.com:8443/r");
  EXPECT_EQ(url_without_secrets("https://a:b@c@host/p"), "https://host/p");
  EXPECT_EQ(url_without_secrets("ssh://git@example.com/r.git"), "ssh://example.com/r.git");
  EXPECT_EQ(url_without_secrets("git@github.com:o/r.git"), "git@github.com:o/r.git");
  EXPECT_EQ(url_without_secrets("/srv/git/r.git"), "/srv/git/r.git");
  EXPECT_EQ(url_without_secrets("https://tok@host"), "https://host");
}

}  // namespace
}  // namespace chock
