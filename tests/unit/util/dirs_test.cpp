// Where Chock keeps its own: the one lookup of every XDG base directory, and
// the current directory when it has been removed from under the process.
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process.hpp"
#include "util/dirs.hpp"

namespace chock {
namespace {

// Sets variables for one test and puts back what was there.
class Env {
 public:
  explicit Env(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& n : names_) {
      const char* v = std::getenv(n.c_str());
      saved_.push_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  ~Env() {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (saved_[i])
        ::setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      else
        ::unsetenv(names_[i].c_str());
    }
  }
  Env(const Env&) = delete;
  Env& operator=(const Env&) = delete;

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

struct Kind {
  Xdg kind;
  const char* variable;
  const char* below_home;
};
const Kind kKinds[] = {{Xdg::config, "XDG_CONFIG_HOME", "/.config"},
                       {Xdg::data, "XDG_DATA_HOME", "/.local/share"},
                       {Xdg::state, "XDG_STATE_HOME", "/.local/state"},
                       {Xdg::cache, "XDG_CACHE_HOME", "/.cache"}};

TEST(Dirs, AnAbsoluteXdgVariableIsUsedAndARelativeOneIgnored) {
  for (const auto& k : kKinds) {
    Env env({k.variable, "HOME"});
    ::setenv("HOME", "/home/someone", 1);
    ::setenv(k.variable, "/elsewhere/base", 1);
    auto dir = chock_dir(k.kind);
    ASSERT_TRUE(dir) << k.variable << ": " << dir.error().message();
    EXPECT_EQ(*dir, "/elsewhere/base/chock") << k.variable;
    // The XDG specification: a relative path is invalid and ignored.
    ::setenv(k.variable, "relative/base", 1);
    dir = chock_dir(k.kind);
    ASSERT_TRUE(dir) << k.variable << ": " << dir.error().message();
    EXPECT_EQ(*dir, std::string("/home/someone") + k.below_home + "/chock") << k.variable;
  }
}

// Without an absolute HOME: below the home /etc/passwd gives, or, for a uid
// with no such line (the suites' unprivileged uid), an error naming both.
TEST(Dirs, WithoutHomeThePasswdHomeElseAnErrorNamingBoth) {
  const passwd* pw = ::getpwuid(::getuid());
  const std::string home = pw != nullptr ? pw->pw_dir : "";
  for (const auto& k : kKinds) {
    Env env({k.variable, "HOME"});
    ::unsetenv(k.variable);
    ::setenv("HOME", "not/absolute", 1);
    auto dir = chock_dir(k.kind);
    if (!home.empty() && home[0] == '/') {
      ASSERT_TRUE(dir) << k.variable << ": " << dir.error().message();
      EXPECT_EQ(*dir, home + k.below_home + "/chock") << k.variable;
    } else {
      ASSERT_FALSE(dir) << k.variable << " gave " << *dir;
      EXPECT_NE(dir.error().message().find(std::string("neither ") + k.variable + " nor HOME"),
                std::string::npos)
          << dir.error().message();
    }
  }
}

TEST(Dirs, ARemovedCurrentDirectoryIsDotNotTheRoot) {
  char before[4096];
  ASSERT_NE(::getcwd(before, sizeof before), nullptr);
  test::TempDir dir{"chock-dirs"};
  ASSERT_EQ(::mkdir((dir / "gone").c_str(), 0700), 0);
  char* real = ::realpath((dir / "gone").c_str(), nullptr);  // getcwd answers the real path
  ASSERT_NE(real, nullptr);
  const std::string gone = real;
  std::free(real);
  ASSERT_EQ(::chdir(gone.c_str()), 0);
  EXPECT_EQ(current_dir(), gone);
  ASSERT_EQ(::rmdir(gone.c_str()), 0);
  // "." rather than "/": resolving the project from it then fails by name.
  EXPECT_EQ(current_dir(), ".");
  ASSERT_EQ(::chdir(before), 0);
  EXPECT_EQ(current_dir(), before);
}

}  // namespace
}  // namespace chock
