// Landlock: the rights handled and reported for each ABI, and a ruleset
// applied for real in a forked child.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "process.hpp"
#include "sandbox/landlock.hpp"

namespace chock::landlock {
namespace {

using Names = std::vector<std::string>;

TEST(LandlockRights, HandledForEachAbi) {
  // execute .. make_sym (ABI 1), refer (2), truncate (3), nothing new for
  // files at 4 (network), ioctl_dev (5), nothing new for files at 6 and 7.
  const std::uint64_t expected[8] = {0, 0x1fff, 0x3fff, 0x7fff, 0x7fff, 0xffff, 0xffff, 0xffff};
  for (int abi = 0; abi <= 7; ++abi) EXPECT_EQ(fs_rights(abi), expected[abi]) << "ABI " << abi;
  EXPECT_EQ(fs_rights(8), 0xffffU);
  EXPECT_EQ(fs_rights(-1), 0U);
}

TEST(LandlockRights, MissingForEachAbi) {
  EXPECT_EQ(missing_rights(1), (Names{"refer", "truncate", "ioctl_dev"}));
  EXPECT_EQ(missing_rights(2), (Names{"truncate", "ioctl_dev"}));
  EXPECT_EQ(missing_rights(3), (Names{"ioctl_dev"}));
  EXPECT_EQ(missing_rights(4), (Names{"ioctl_dev"}));
  for (int abi = 5; abi <= 7; ++abi) EXPECT_EQ(missing_rights(abi), Names{}) << "ABI " << abi;
}

TEST(LandlockRights, ScopesFromAbi6) {
  for (int abi = 1; abi <= 5; ++abi) EXPECT_EQ(scopes(abi), 0U);
  EXPECT_EQ(scopes(6), scope::abstract_unix_socket | scope::signal);
  EXPECT_EQ(scopes(7), scope::abstract_unix_socket | scope::signal);
}

TEST(LandlockRights, TheThreeGrantSets) {
  EXPECT_EQ(right_names(grant(Access::read_only, 7)), "execute|read_file|read_dir");
  EXPECT_EQ(right_names(grant(Access::read_only_file, 7)), "execute|read_file");
  EXPECT_EQ(right_names(grant(Access::read_write, 7)),
            "execute|write_file|read_file|read_dir|remove_dir|remove_file|make_dir|make_reg|make_sock|"
            "make_fifo|make_sym|refer|truncate|ioctl_dev");
  EXPECT_EQ(right_names(grant(Access::read_write, 1)),
            "execute|write_file|read_file|read_dir|remove_dir|remove_file|make_dir|make_reg|make_sock|"
            "make_fifo|make_sym");
  EXPECT_EQ(grant(Access::read_write, 2) & right::refer, right::refer);
  EXPECT_EQ(grant(Access::read_write, 7) & (right::make_char | right::make_block), 0U);
  EXPECT_EQ(right_names(device_rights(7)), "write_file|read_file|ioctl_dev");
  EXPECT_EQ(right_names(device_rights(4)), "write_file|read_file");
}

TEST(LandlockPrepare, NoLandlockIsARefusalThatSaysWhy) {
  auto p = prepare_for(0, ENOSYS, {{"/tmp", grant(Access::read_write, 7)}});
  ASSERT_FALSE(p);
  EXPECT_EQ(p.error().kind, Errc::landlock_unavailable);
  EXPECT_EQ(p.error().message().rfind(
                "Landlock is not available on this kernel (landlock_create_ruleset: ENOSYS", 0),
            0U)
      << p.error().message();
  auto disabled = prepare_for(0, EOPNOTSUPP, {});
  ASSERT_FALSE(disabled);
  EXPECT_NE(disabled.error().message().find("lsm="), std::string::npos);
}

TEST(LandlockPrepare, MasksEachRuleToTheAbiAndReportsWhatIsMissing) {
  auto p = prepare_for(1, 0, {{"/w", grant(Access::read_write, 7)}, {"/dev/null", device_rights(7)}});
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->handled, 0x1fffU);
  EXPECT_EQ(p->scoped, 0U);
  EXPECT_EQ(p->rules[0].access, grant(Access::read_write, 1));
  EXPECT_EQ(p->rules[1].access, right::read_file | right::write_file);
  auto r = report(*p);
  EXPECT_EQ(r.abi, 1);
  EXPECT_EQ(r.handled, 0x1fffU);
  EXPECT_EQ(r.missing, (Names{"refer", "truncate", "ioctl_dev"}));
  EXPECT_FALSE(r.scoped_abstract_unix);

  auto p7 = prepare_for(7, 0, {{"/w", grant(Access::read_write, 7)}});
  ASSERT_TRUE(p7);
  auto r7 = report(*p7);
  EXPECT_EQ(r7.handled, 0xffffU);
  EXPECT_TRUE(r7.missing.empty());
  EXPECT_TRUE(r7.scoped_abstract_unix);
  EXPECT_TRUE(r7.scoped_signals);
}

TEST(LandlockPrepare, BadRulesAreRefusedByPath) {
  auto relative = prepare_for(7, 0, {{"tmp", grant(Access::read_write, 7)}});
  ASSERT_FALSE(relative);
  EXPECT_EQ(relative.error().kind, Errc::bad_config);
  EXPECT_EQ(relative.error().message(), "Landlock rule needs an absolute path: tmp");
  auto empty = prepare_for(2, 0, {{"/x", right::truncate}});
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().message(), "Landlock rule grants no right this kernel has (asked truncate): /x");
}

TEST(LandlockPrepare, TheKernelsOwnAnswer) {
  const int abi = probe_abi();
  if (abi == 0) {
    auto p = prepare({});
    ASSERT_FALSE(p);
    EXPECT_EQ(p.error().kind, Errc::landlock_unavailable);
    GTEST_SKIP() << "this kernel has no Landlock: " << p.error().message();
  }
  auto p = prepare({{"/", right::read_dir}});
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->abi, abi);
  EXPECT_EQ(p->handled, fs_rights(abi));
}

// What the child tried, each answered by an errno (0: it worked).
enum Attempt {
  kCreateOutside,
  kCreateInRw,
  kReadRo,
  kTruncateRo,
  kOpenTruncRo,
  kTruncateRw,
  kRenameRwToRw,
  kRenameRwToRo,
  kRenameRoToRw,
  kMknodFifo,
  kMknodChar,
  kSignalParent,
  kConnectAbstract,
  kCount
};

int answer(int rc) {
  return rc == 0 ? 0 : errno;
}

TEST(LandlockApplied, RefusesOutsideTheGrantsAndAllowsInside) {
  const int abi = probe_abi();
  if (abi == 0) GTEST_SKIP() << "this kernel has no Landlock";
  test::TempDir dir("chock-landlock");
  for (const char* sub : {"rw", "rw2", "ro", "outside"}) ASSERT_EQ(mkdir((dir / sub).c_str(), 0755), 0);
  test::write_file(dir / "ro/f", "read me");
  test::write_file(dir / "rw/f", "truncate me");
  // An abstract socket outside the ruleset, to be unreachable from inside (ABI 6).
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string name = "chock-landlock-test-" + std::to_string(getpid());
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  const auto addr_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), addr_len), 0);
  ASSERT_EQ(listen(listener, 1), 0);

  auto prepared = prepare({{dir / "rw", grant(Access::read_write, abi)},
                           {dir / "rw2", grant(Access::read_write, abi)},
                           {dir / "ro", grant(Access::read_only, abi)},
                           {dir / "ro/f", grant(Access::read_only_file, abi)}});
  ASSERT_TRUE(prepared) << prepared.error().message();
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const std::string p_outside = dir / "outside/new", p_rw = dir / "rw/new", p_ro_f = dir / "ro/f",
                    p_rw_f = dir / "rw/f", p_rw2 = dir / "rw2/new", p_ro_new = dir / "ro/new",
                    p_rw_from_ro = dir / "rw/from-ro", p_fifo = dir / "rw/fifo", p_chr = dir / "rw/chr";
  pid_t pid = fork();
  if (pid == 0) {
    Failure failure{};
    if (!apply(*prepared, &failure)) _exit(100);
    std::array<int, kCount> got{};
    got[kCreateOutside] = answer(open(p_outside.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644) >= 0 ? 0 : -1);
    got[kCreateInRw] = answer(open(p_rw.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644) >= 0 ? 0 : -1);
    got[kReadRo] = answer(open(p_ro_f.c_str(), O_RDONLY | O_CLOEXEC) >= 0 ? 0 : -1);
    got[kTruncateRo] = answer(truncate(p_ro_f.c_str(), 0));
    got[kOpenTruncRo] = answer(open(p_ro_f.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC) >= 0 ? 0 : -1);
    got[kTruncateRw] = answer(truncate(p_rw_f.c_str(), 0));
    got[kRenameRwToRw] = answer(rename(p_rw.c_str(), p_rw2.c_str()));
    got[kRenameRwToRo] = answer(rename(p_rw2.c_str(), p_ro_new.c_str()));
    got[kRenameRoToRw] = answer(rename(p_ro_f.c_str(), p_rw_from_ro.c_str()));
    got[kMknodFifo] = answer(mknod(p_fifo.c_str(), S_IFIFO | 0600, 0));
    got[kMknodChar] = answer(mknod(p_chr.c_str(), S_IFCHR | 0600, makedev(1, 3)));
    got[kSignalParent] = answer(kill(getppid(), 0));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    got[kConnectAbstract] = answer(connect(s, reinterpret_cast<sockaddr*>(&addr), addr_len));
    (void)!write(fds[1], got.data(), sizeof got);
    _exit(0);
  }
  close(fds[1]);
  std::array<int, kCount> got{};
  got.fill(-1);
  ASSERT_EQ(read(fds[0], got.data(), sizeof got), static_cast<ssize_t>(sizeof got));
  close(fds[0]);
  close(listener);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  EXPECT_EQ(got[kCreateOutside], EACCES) << "a write outside every grant, which the directory mode allows";
  EXPECT_EQ(got[kCreateInRw], 0);
  EXPECT_EQ(got[kReadRo], 0);
  EXPECT_EQ(got[kOpenTruncRo], EACCES) << "write_file is not in the read-only set";
  if (abi >= 3) {
    EXPECT_EQ(got[kTruncateRo], EACCES) << "truncate is handled from ABI 3";
    EXPECT_EQ(got[kTruncateRw], 0);
  }
  if (abi >= 2) {
    EXPECT_EQ(got[kRenameRwToRw], 0) << "refer is in the read-write set";
  }
  EXPECT_EQ(got[kRenameRwToRo], abi >= 2 ? EACCES : EXDEV);
  EXPECT_EQ(got[kRenameRoToRw], EACCES);
  EXPECT_EQ(got[kMknodFifo], 0);
  EXPECT_EQ(got[kMknodChar], EACCES) << "make_char is in no grant set";
  if (abi >= 6) {
    EXPECT_EQ(got[kSignalParent], EPERM) << "signals are scoped to the domain";
    EXPECT_EQ(got[kConnectAbstract], EPERM) << "abstract unix sockets are scoped to the domain";
  }
  EXPECT_FALSE(test::exists(dir / "outside/new"));
  EXPECT_TRUE(test::exists(dir / "rw/fifo"));
}

TEST(LandlockApplied, AFailedRuleNamesItsStepAndIndex) {
  const int abi = probe_abi();
  if (abi == 0) GTEST_SKIP() << "this kernel has no Landlock";
  auto prepared =
      prepare({{"/", right::read_dir}, {"/nonexistent/chock/path", grant(Access::read_only, abi)}});
  ASSERT_TRUE(prepared);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    Failure failure{"", 0, -1};
    const bool ok = apply(*prepared, &failure);
    char out[128] = {};
    const int head[3] = {ok ? 1 : 0, failure.rule, failure.error};
    std::memcpy(out, head, sizeof head);
    std::strncpy(out + sizeof head, failure.step, sizeof out - sizeof head - 1);
    (void)!write(fds[1], out, sizeof out);
    _exit(0);
  }
  close(fds[1]);
  char buf[128] = {};
  ssize_t n = read(fds[0], buf, sizeof buf - 1);
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  ASSERT_GT(n, static_cast<ssize_t>(3 * sizeof(int)));
  int out[3];
  std::memcpy(out, buf, sizeof out);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 1);
  EXPECT_EQ(out[2], ENOENT);
  EXPECT_STREQ(buf + sizeof out, "landlock_rule");
}

}  // namespace
}  // namespace chock::landlock
