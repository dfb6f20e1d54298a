// A denied file under another name (a hard link of it), and a denied path
// that names nothing: issue 54, class 3.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "chock/workspace.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

const std::string kNotice = workspace::kDenyNotice;

void hard_link(const std::string& from, const std::string& to) {
  ASSERT_EQ(::link(from.c_str(), to.c_str()), 0) << from << " -> " << to << ": " << std::strerror(errno);
}

// Every name of the denied inode shows the notice, the bytes in no file of
// the session; a link made after the session began is covered at the next call.
TEST(DeniedFiles, AHardLinkOfADeniedFileShowsTheNoticeNotTheSecret) {
  Fixture f;
  f.init_plain();
  ::mkdir(f.file("sub").c_str(), 0755);
  write_file(f.file("secret.env"), "HARDLINK-SECRET-5e1a\n");
  hard_link(f.file("secret.env"), f.file("other.env"));
  hard_link(f.file("secret.env"), f.file("Secret.ENV"));
  hard_link(f.file("secret.env"), f.file("sub/copy.env"));
  Output o = f.run({"--keep", "--deny", "secret.env"}, "cat secret.env other.env Secret.ENV sub/copy.env");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, kNotice + kNotice + kNotice + kNotice);
  for (const char* name : {"other.env", "Secret.ENV", "sub/copy.env"})
    EXPECT_NE(o.err.find("--deny secret.env: " + std::string(name) + " is another name of it (a hard link)"),
              std::string::npos)
        << o.err;
  const std::string id = session_id(o);
  EXPECT_EQ(files_containing(f.sessions() + "/" + id, "HARDLINK-SECRET-5e1a"), std::vector<std::string>{});

  hard_link(f.file("secret.env"), f.file("later.env"));
  Output later = f.run({"--session", id}, "cat later.env");
  ASSERT_EQ(later.status, 0) << describe(later);
  EXPECT_EQ(later.out, kNotice);
  EXPECT_EQ(files_containing(f.sessions() + "/" + id, "HARDLINK-SECRET-5e1a"), std::vector<std::string>{});
  EXPECT_EQ(read_file(f.file("other.env")), "HARDLINK-SECRET-5e1a\n");
  EXPECT_EQ(f.chock({"workspace", "remove", "--force", id}).status, 0);
}

// In a git project: a link inside a carried directory is covered there; a
// link git tracks cannot be (its bytes are in the objects the call reads):
// the call is refused, naming both.
TEST(DeniedFiles, AHardLinkInACarriedDirectoryIsCoveredAndOneGitTracksIsRefused) {
  Fixture f;
  f.init_git();
  write_file(f.file(".gitignore"), "*.env\nnode_modules/\n");
  f.commit_all("ignore env files and dependencies");
  std::filesystem::create_directories(f.file("node_modules/pkg"));
  write_file(f.file("node_modules/pkg/index.js"), "module.exports = 1;\n");
  write_file(f.file(".env"), "CARRIED-SECRET-0b77\n");
  hard_link(f.file(".env"), f.file("node_modules/pkg/.env"));
  Output o = f.run({"--deny", ".env", "--carry", "node_modules"},
                   "cat .env node_modules/pkg/.env node_modules/pkg/index.js");
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, kNotice + kNotice + "module.exports = 1;\n");

  write_file(f.file("tracked.txt"), "soon a link\n");
  f.commit_all("a tracked file");
  ASSERT_EQ(::unlink(f.file("tracked.txt").c_str()), 0);
  hard_link(f.file(".env"), f.file("tracked.txt"));
  Output refused = f.run({"--deny", ".env"}, "cat tracked.txt");
  EXPECT_EQ(refused.status, 125) << describe(refused);
  EXPECT_EQ(refused.out, "");
  EXPECT_NE(
      refused.err.find("--deny .env: tracked.txt is another name of it (a hard link) and git tracks it"),
      std::string::npos)
      << refused.err;
  EXPECT_EQ(std::count(refused.err.begin(), refused.err.end(), '\n'), 1) << refused.err;
}

// Other names Chock cannot cover, or cannot look for, refuse the call,
// naming both: one inside .git (which the call reads), one a commit held
// once, one in a directory the caller cannot list (root reads every one:
// there, the name is found and covered).
TEST(DeniedFiles, AnOtherNameChockCannotSearchOrCoverRefusesTheCall) {
  Fixture f;
  f.init_git();
  write_file(f.file(".gitignore"), "*.env\nlocked/\n");
  write_file(f.file("old.txt"), "committed once\n");
  f.commit_all("ignore env files; old.txt");
  git_ok(f.project(), {"rm", "-q", "old.txt"});
  f.commit_all("old.txt gone");
  write_file(f.file(".env"), "UNCOVERABLE-SECRET-3d2f\n");
  struct Case {
    std::string link;
    std::string says;
  };
  for (const Case& c :
       {Case{".git/hooks/env", ".git/hooks/env is another name of it (a hard link) that Chock cannot cover"},
        Case{"old.txt", "old.txt is another name of it (a hard link) and git has it in commit "}}) {
    hard_link(f.file(".env"), f.file(c.link));
    Output o = f.run({"--deny", ".env"}, "cat .env");
    EXPECT_EQ(o.status, 125) << c.link << "\n" << describe(o);
    EXPECT_EQ(o.out, "") << c.link;
    EXPECT_NE(o.err.find("--deny .env: " + c.says), std::string::npos) << o.err;
    ASSERT_EQ(::unlink(f.file(c.link).c_str()), 0);
  }
  // A name found in the project reaches the terminal escaped.
  hard_link(f.file(".env"), f.file(".git/hooks/t\x1b]0;x\a"));
  Output escaped = f.run({"--deny", ".env"}, "cat .env");
  EXPECT_EQ(escaped.status, 125) << describe(escaped);
  EXPECT_NE(escaped.err.find(".git/hooks/t\\x1b]0;x\\x07 is another name of it"), std::string::npos)
      << escaped.err;
  EXPECT_EQ(escaped.err.find('\x1b'), std::string::npos) << escaped.err;
  ASSERT_EQ(::unlink(f.file(".git/hooks/t\x1b]0;x\a").c_str()), 0);
  ::mkdir(f.file("locked").c_str(), 0755);
  hard_link(f.file(".env"), f.file("locked/copy.env"));
  ASSERT_EQ(::chmod(f.file("locked").c_str(), 0111), 0);
  Output o = f.run({"--deny", ".env", "--carry", "locked"}, "cat locked/copy.env");
  ::chmod(f.file("locked").c_str(), 0755);
  if (::geteuid() == 0) {
    EXPECT_EQ(o.status, 0) << describe(o);
    EXPECT_EQ(o.out, kNotice);
  } else {
    EXPECT_EQ(o.status, 125) << describe(o);
    EXPECT_EQ(o.out, "");
    EXPECT_NE(o.err.find("and Chock cannot read locked in the project"), std::string::npos) << o.err;
  }
}

// A denied path that names no file refuses the call: a typo would leave the
// real file readable. Where only the case differs, the line names the file.
TEST(DeniedFiles, ADenyPathThatNamesNoFileRefusesTheCall) {
  Fixture f;
  f.init_plain();
  write_file(f.file("secret.env"), "TYPO-SECRET-91c0\n");
  struct Case {
    std::vector<std::string> flags;
    std::string says;
  };
  for (const Case& c : {Case{{"--deny", "secrt.env"}, "--deny secrt.env: no such file in the project ("},
                        Case{{"--deny", "SECRET.env"}, ", which has secret.env beside it;"}}) {
    Output o = f.run(c.flags, "cat secret.env");
    EXPECT_EQ(o.status, 125) << describe(o);
    EXPECT_EQ(o.out, "");
    EXPECT_NE(o.err.find(c.says), std::string::npos) << o.err;
    EXPECT_EQ(std::count(o.err.begin(), o.err.end(), '\n'), 1) << o.err;
  }
  write_file(f.file("chock.zon"), ".{ .deny_read = .{ \"secret.evn\" } }\n");
  Output zon = f.run({}, "cat secret.env");
  EXPECT_EQ(zon.status, 125) << describe(zon);
  EXPECT_NE(zon.err.find("--deny secret.evn: no such file in the project"), std::string::npos) << zon.err;
  // The organisation's list names no project: a file it names may be absent.
  ::unlink(f.file("chock.zon").c_str());
  TempDir org("chock-org");
  const std::string bundle = org / "bundle.zon";
  write_file(bundle, ".{ .deny_read = .{ \"absent.env\", \"secret.env\" } }\n");
  Output by_org = f.chock({"run", "--org-bundle", bundle, "--", "cat", "secret.env"});
  ASSERT_EQ(by_org.status, 0) << describe(by_org);
  EXPECT_EQ(by_org.out, kNotice);
}

}  // namespace
}  // namespace chock::test::ws
