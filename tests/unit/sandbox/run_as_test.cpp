// A host program root starts as the uid calls run as (a root caller's base
// checkout, RunAs in util/subprocess.hpp): it reads what root can read, and
// nothing more: no write into root's files, no other capability, no group of
// root's, and what it makes is that uid's.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "process.hpp"
#include "sandbox/seccomp.hpp"
#include "util/subprocess.hpp"

namespace chock {
namespace {

constexpr uid_t kRunUid = 65534;

RunAs run_uid() {
  auto keep_uid = seccomp::keep_uid();
  EXPECT_TRUE(keep_uid) << keep_uid.error().message();
  return RunAs{kRunUid, kRunUid, keep_uid ? keep_uid->instructions : std::vector<sock_filter>{}};
}

Expected<ProgramOutput> run_as(const std::string& script, const std::string& cwd) {
  return run_program(
      ProgramRun{{"sh", "-c", script}, current_environment(), cwd, {}, std::chrono::seconds(30), run_uid()});
}

TEST(RunAs, TheProgramReadsWhatRootReadsAndWritesNothingOfRoots) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root gives a program another uid (the EPERM case runs as a user)";
  test::TempDir dir("chock-run-as");
  ASSERT_EQ(::chmod(dir.path().c_str(), 0700), 0);
  test::write_file(dir / "secret", "root's own\n");
  ASSERT_EQ(::chmod((dir / "secret").c_str(), 0600), 0);
  test::write_file(dir / "roots", "unchanged\n");
  ASSERT_EQ(::mkdir((dir / "out").c_str(), 0755), 0);
  ASSERT_EQ(::chown((dir / "out").c_str(), kRunUid, kRunUid), 0);

  auto r = run_as(
      "cat secret; grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapAmb):' /proc/self/status; "
      "echo changed > roots || echo refused-existing; echo new > mine || echo refused-new; "
      "echo made > out/made; setpriv --reuid=0 id -u || echo refused-root",
      dir.path());
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->status, 0) << r->err;
  const std::string& out = r->out;
  EXPECT_NE(out.find("root's own\n"), std::string::npos) << "a 0600 file of root's in a 0700 directory\n"
                                                         << out;
  // The real uid stays root's (for access(2)); effective, saved and file system uids are the run uid's.
  EXPECT_NE(out.find("Uid:\t0\t65534\t65534\t65534\n"), std::string::npos) << out;
  EXPECT_NE(out.find("Gid:\t65534\t65534\t65534\t65534\n"), std::string::npos) << out;
  const auto groups = out.find("Groups:");
  ASSERT_NE(groups, std::string::npos) << out;
  const std::string groups_line = out.substr(groups, out.find('\n', groups) - groups);
  EXPECT_EQ(groups_line.find_first_of("0123456789"), std::string::npos) << "a supplementary group\n" << out;
  // The shell's return to its real uid (dash does it when the two differ) and a
  // setresuid(0) are both refused: the effective uid stays the run uid's.
  EXPECT_NE(out.find("refused-root"), std::string::npos) << out;
  EXPECT_NE(r->err.find("setresuid failed: Operation not permitted"), std::string::npos) << r->err;
  for (const char* set : {"CapInh", "CapPrm", "CapEff", "CapAmb"})
    EXPECT_NE(out.find(std::string(set) + ":\t0000000000000004\n"), std::string::npos)
        << set << ": CAP_DAC_READ_SEARCH alone\n"
        << out;
  EXPECT_NE(out.find("refused-existing"), std::string::npos) << out;
  EXPECT_NE(out.find("refused-new"), std::string::npos) << out;
  EXPECT_NE(r->err.find("Permission denied"), std::string::npos) << r->err;
  EXPECT_EQ(test::read_file(dir / "roots"), "unchanged\n");
  EXPECT_FALSE(test::exists(dir / "mine"));
  struct stat made {};
  ASSERT_EQ(::stat((dir / "out/made").c_str(), &made), 0);
  EXPECT_EQ(made.st_uid, kRunUid);
  EXPECT_EQ(made.st_gid, kRunUid);
}

TEST(RunAs, AProgramThatCannotStartIsAnErrorNamingTheUid) {
  if (::geteuid() != 0)
    GTEST_SKIP() << "only root gives a program another uid (the EPERM case runs as a user)";
  auto r = run_program(ProgramRun{
      {"/nonexistent/program"}, current_environment(), {}, {}, std::chrono::seconds(30), run_uid()});
  ASSERT_FALSE(r) << "a missing program ran";
  EXPECT_EQ(r.error().code, ENOENT);
  EXPECT_NE(r.error().message().find("as uid 65534"), std::string::npos) << r.error().message();
}

TEST(RunAs, AnUnprivilegedCallerCannotGiveAnotherUid) {
  if (::geteuid() == 0) GTEST_SKIP() << "root can give another uid (the test above); this one runs as a user";
  auto r = run_as("echo ran", "/");
  ASSERT_FALSE(r) << "a program started as uid 65534 by uid " << ::geteuid();
  EXPECT_EQ(r.error().code, EPERM) << r.error().message();
}

}  // namespace
}  // namespace chock
