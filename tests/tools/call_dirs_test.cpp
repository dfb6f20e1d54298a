// What a call sees besides its workspace: the project's toolchain cache as
// its HOME (kept across calls and sessions of the project, capped, never
// another project's, never the host's HOME) and the session's scratchpad.
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdint>
#include <ctime>
#include <set>
#include <sstream>

#include "sandbox/directory_cap.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CallDirs, HomeIsTheProjectsCacheKeptAcrossSessionsAndNoOneElses) {
  Fixture f;
  f.init_git();
  auto first = f.run({}, "echo kept > \"$HOME/note\"; echo \"$HOME $XDG_CACHE_HOME\"");
  ASSERT_EQ(first.status, 0) << describe(first);
  EXPECT_EQ(first.out, "/run/chock/cache/home /run/chock/cache/home/.cache\n");
  auto second = f.run({}, "cat \"$HOME/note\"");  // a new session of the same project
  EXPECT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.out, "kept\n");
  Fixture other;
  other.init_git();
  auto elsewhere = other.run({}, "ls -A \"$HOME\"; test -e \"$HOME/note\"; echo \"note $?\"");
  EXPECT_EQ(elsewhere.out, "note 1\n") << describe(elsewhere);
}

TEST(CallDirs, TheHostsHomeIsNotThere) {
  Fixture f;
  f.init_git();
  const char* home = std::getenv("HOME");
  ASSERT_NE(home, nullptr);
  write_file(std::string(home) + "/host-secret", "the caller's own file\n");
  auto out = f.run({}, std::string("test -e '") + home + "/host-secret'; echo \"host $?\"; ls -A \"$HOME\"");
  EXPECT_EQ(out.status, 0) << describe(out);
  EXPECT_EQ(out.out, "host 1\n") << describe(out);
}

TEST(CallDirs, PipInstallUserPersistsToTheNextSession) {
  Fixture f;
  f.init_git();
  // A wheel made by hand, so nothing is downloaded: one module and its metadata.
  const std::string make = R"PY(
import zipfile, hashlib, base64
files = {"chockdemo.py": b"ANSWER = 42\n",
         "chockdemo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: chockdemo\nVersion: 1.0\n",
         "chockdemo-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: chock-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
record = ""
for name, data in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record += "%s,sha256=%s,%d\n" % (name, digest, len(data))
record += "chockdemo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile("chockdemo-1.0-py3-none-any.whl", "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
    z.writestr("chockdemo-1.0.dist-info/RECORD", record)
)PY";
  write_file(f.file("make_wheel.py"), make);
  RunOptions in_project;
  in_project.cwd = f.project();
  ASSERT_EQ(run_process({"/usr/bin/python3", f.file("make_wheel.py")}, in_project).status, 0);
  f.commit_all("a wheel");  // the workspace is the committed tree
  auto check = run_process({"/usr/bin/python3", "-m", "pip", "--version"});
  if (check.status != 0) GTEST_SKIP() << "no pip for /usr/bin/python3 (python3-pip): " << check.err;
  auto install = f.run({},
                       "/usr/bin/python3 -m pip install -q --user --no-index --break-system-packages "
                       "--disable-pip-version-check ./chockdemo-1.0-py3-none-any.whl");
  ASSERT_EQ(install.status, 0) << describe(install);
  auto use = f.run({}, "/usr/bin/python3 -c 'import chockdemo; print(chockdemo.ANSWER)'");
  EXPECT_EQ(use.status, 0) << describe(use);
  EXPECT_EQ(use.out, "42\n");
}

TEST(CallDirs, TheCapStopsACallThatWritesPastItAndClearEmptiesTheCache) {
  Fixture f;
  f.init_git();
  write_file(f.file("chock.zon"), ".{ .limits = .{ .cache = \"8MiB\" } }\n");
  f.commit_all("a cache cap");
  auto small = f.run({}, "head -c 4194304 /dev/zero > \"$HOME/small\"; echo wrote");
  EXPECT_EQ(small.status, 0) << describe(small);
  auto big = f.run({}, "head -c 67108864 /dev/zero > \"$HOME/big\"; sleep 5; echo survived");
  EXPECT_EQ(big.status, 137) << describe(big);
  EXPECT_FALSE(has(big.out, "survived"));
  EXPECT_TRUE(has(big.err,
                  "chock: the program was stopped by the cache limit: the project's toolchain cache "
                  "(/run/chock/cache; .limits.cache sets its cap, `chock cache clear` empties it) held "))
      << describe(big);
  EXPECT_TRUE(has(big.err, "past its cap of 8 MiB")) << describe(big);
  // Over its cap, every call is stopped until the cache is cleared.
  auto cleared = f.chock({"cache", "clear"});
  EXPECT_EQ(cleared.status, 0) << describe(cleared);
  EXPECT_TRUE(has(cleared.out, "is cleared")) << cleared.out;
  auto after = f.run({}, "ls -A \"$HOME\"; echo empty");
  EXPECT_EQ(after.status, 0) << describe(after);
  EXPECT_EQ(after.out, "empty\n");
}

// The record beside the project's cache (<key>.count: bytes, its file
// system's use then, when), or "" with none.
std::string count_record(const Fixture& f) {
  for (const auto& [path, bytes] : snapshot(f.cache() + "/chock"))
    if (path.size() > 6 && path.compare(path.size() - 6, 6, ".count") == 0)
      return f.cache() + "/chock/" + path;
  return "";
}

std::uint64_t below(std::uint64_t used) {
  return used > (1ULL << 30) ? used - (1ULL << 30) : 0;
}

std::uint64_t fs_used(const std::string& path) {
  struct statvfs v {};
  if (::statvfs(path.c_str(), &v) != 0) return 0;
  return (static_cast<std::uint64_t>(v.f_blocks) - v.f_bfree) * v.f_frsize;
}

// A call starts from the cache's last count while the most the cache can
// have grown since keeps it under its cap: a cache of 20,000 files cost a
// walk of 20,000 stats at every call's start (26.8 ms against 3.7).
TEST(CallDirs, ACallStartsFromTheCachesLastCountNotFromAWalkOfIt) {
  Fixture f;
  f.init_git();
  auto first = f.run({}, "mkdir -p \"$HOME/d\" && head -c 65536 /dev/zero > \"$HOME/d/f\"; echo ok");
  ASSERT_EQ(first.status, 0) << describe(first);
  const std::string record = count_record(f);
  ASSERT_FALSE(record.empty()) << "no count was kept beside " << f.cache();
  auto kept = sandbox::read_directory_count(record);
  ASSERT_TRUE(kept) << read_file(record);
  EXPECT_GT(kept->bytes, 0U);  // counted when the call started, before it wrote
  const std::string cache = record.substr(0, record.size() - 6);
  // A count of 1 byte, recent, taken when its file system held less than now
  // (by 1 GiB: the tests beside this one remove 64 MiB files, and the bound
  // stays under the cap of 2 GiB): the next call trusts it (a walk would keep
  // the true count).
  const auto now = static_cast<std::int64_t>(std::time(nullptr));
  const sandbox::DirectoryCount trusted{1, below(fs_used(cache)), now};
  sandbox::keep_directory_count(record, trusted);
  ASSERT_EQ(f.run({}, "true").status, 0);
  auto after = sandbox::read_directory_count(record);
  ASSERT_TRUE(after);
  EXPECT_EQ(after->bytes, 1U) << "the cache was walked again";
  // Counted again: a count too old, one taken when the file system held more
  // than now (a removal elsewhere could hide the cache's growth), a record
  // that does not check out (two calls' lines over each other).
  const sandbox::DirectoryCount old{1, below(fs_used(cache)), now - 301};
  const sandbox::DirectoryCount fuller{1, fs_used(cache) + (1ULL << 40), now};
  for (const auto& stale : {old, fuller}) {
    sandbox::keep_directory_count(record, stale);
    ASSERT_EQ(f.run({}, "true").status, 0);
    auto recounted = sandbox::read_directory_count(record);
    ASSERT_TRUE(recounted);
    EXPECT_GE(recounted->bytes, 65536U) << "not counted again after a count of " << stale.at;
  }
  sandbox::keep_directory_count(record, trusted);
  std::string torn = read_file(record);
  torn[3] = torn[3] == '9' ? '8' : '9';
  write_file(record, torn, 0600);
  ASSERT_EQ(f.run({}, "true").status, 0);
  auto recounted = sandbox::read_directory_count(record);
  ASSERT_TRUE(recounted);
  EXPECT_GE(recounted->bytes, 65536U) << "a torn record was trusted";
}

TEST(CallDirs, TheScratchpadIsTheSessionsAlone) {
  Fixture f;
  f.init_git();
  auto first = f.run({"--keep"}, "echo noted > \"$CHOCK_SCRATCHPAD/n\"; echo \"$CHOCK_SCRATCHPAD $TMPDIR\"");
  ASSERT_EQ(first.status, 0) << describe(first);
  EXPECT_EQ(first.out, "/run/chock/scratch /tmp\n");
  const std::string id = session_id(first);
  ASSERT_FALSE(id.empty()) << describe(first);
  auto again = f.run({"--session", id}, "cat \"$CHOCK_SCRATCHPAD/n\"");
  EXPECT_EQ(again.out, "noted\n") << describe(again);
  auto other = f.run({}, "test -e \"$CHOCK_SCRATCHPAD/n\"; echo \"other $?\"");
  EXPECT_EQ(other.out, "other 1\n") << describe(other);
}

// Nothing of the data directory is in a call but the session's own
// subdirectories: not the directory, not its parent, not the credential
// store; by its path and by the mount table.
TEST(CallDirs, TheDataDirectoryAndTheCredentialStoreAreInNoMount) {
  Fixture f;
  f.init_git();
  auto set = f.chock({"credentials", "set", "api.example.org"}, "token never-inside\n");
  ASSERT_EQ(set.status, 0) << describe(set);
  const std::string store = f.data() + "/chock/credentials.json";
  ASSERT_EQ(::access(store.c_str(), F_OK), 0);
  auto out = f.run({}, "test -e '" + store + "'; echo \"store $?\"; ls '" + f.data() +
                           "/chock' 2>&1 | head -1; "
                           "grep -c never-inside -r /run/chock 2>/dev/null; cat /proc/self/mountinfo");
  ASSERT_EQ(out.status, 0) << describe(out);
  EXPECT_TRUE(has(out.out, "store 1\n")) << out.out;
  // A mount exposes a path when it is of the same file system and its root
  // (the source's path within that file system) is the path or above it.
  struct stat data_st {};
  ASSERT_EQ(::stat(f.data().c_str(), &data_st), 0);
  const std::string data_dev =
      std::to_string(major(data_st.st_dev)) + ":" + std::to_string(minor(data_st.st_dev));
  std::istringstream lines(out.out);
  int mounts = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    if (!(fields >> id >> parent >> dev >> root >> point)) continue;
    ++mounts;
    if (dev != data_dev) continue;
    for (const std::string& hidden : {f.data(), f.data() + "/chock", store})
      EXPECT_FALSE(root == hidden || hidden.starts_with(root == "/" ? root : root + "/"))
          << hidden << " is exposed by " << line;
  }
  EXPECT_GT(mounts, 5) << out.out;
}

// A credential named for a variable is, in the project's filtered calls, a
// sentinel of the secret's shape (its length and public prefix), the same
// for the session's calls and another for the next session; the secret is in
// no variable or process of the call, and a call off the network gets neither.
TEST(CallDirs, ACredentialNamedForAVariableIsASentinelInFilteredCallsNeverTheSecret) {
  Fixture f;
  f.init_git();
  const std::string secret = "sk-test-NeverInsideABCDEFGHIJ0123456789";
  auto set =
      f.chock({"credentials", "set", "api.example.org", "--header", "x-api-key", "--env", "EXAMPLE_API_KEY"},
              secret + "\n");
  ASSERT_EQ(set.status, 0) << describe(set);
  const std::string script =
      "printf '%s\\n' \"$EXAMPLE_API_KEY\"; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | "
      "grep -c 'Never[I]nside'; true";
  auto first = f.run({"--keep", "--net", "filtered"}, script);
  ASSERT_EQ(first.status, 0) << describe(first);
  std::istringstream lines(first.out);
  std::string sentinel, found;
  std::getline(lines, sentinel);
  std::getline(lines, found);
  EXPECT_EQ(sentinel.size(), secret.size()) << sentinel;
  EXPECT_TRUE(sentinel.starts_with("sk-test-")) << sentinel;
  EXPECT_NE(sentinel, secret);
  EXPECT_EQ(sentinel.find("NeverInside"), std::string::npos) << sentinel;
  EXPECT_EQ(found, "0") << describe(first);
  const std::string id = session_id(first);
  auto again = f.run({"--session", id, "--net", "filtered"}, script);
  EXPECT_EQ(again.out.substr(0, again.out.find('\n')), sentinel) << describe(again);
  auto other = f.run({"--net", "filtered"}, script);
  const std::string other_sentinel = other.out.substr(0, other.out.find('\n'));
  EXPECT_EQ(other_sentinel.size(), secret.size()) << describe(other);
  EXPECT_NE(other_sentinel, sentinel) << "a sentinel shared by two sessions";
  auto offline = f.run({"--net", "none"}, "printf '[%s]\\n' \"$EXAMPLE_API_KEY\"");
  EXPECT_EQ(offline.out, "[]\n") << describe(offline);
  // Nor is it in the session's directory that calls see.
  EXPECT_TRUE(files_containing(f.sessions(), "NeverInside").empty());
}

// The README's mount table for a shell call, as the call's own mount table
// docs/mounts.md's table for a shell call, as the call's own mount table
// shows it: below /run/chock exactly the git view, the cache and the
// scratchpad (and with --net filtered, chock-connect), never the memory.
TEST(CallDirs, AShellCallsMountsBelowRunChockAreTheTablesAndNoMore) {
  Fixture f;
  f.init_git();
  auto mounts_of = [&](const std::vector<std::string>& flags) {
    auto out = f.run(flags, "cat /proc/self/mountinfo");
    EXPECT_EQ(out.status, 0) << describe(out);
    std::set<std::string> points;
    std::istringstream lines(out.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::string id, parent, dev, root, point;
      if (fields >> id >> parent >> dev >> root >> point && point.starts_with("/run/chock"))
        points.insert(point);
    }
    return points;
  };
  // /run/chock/bin/git: Chock's git, which preloads PCRE2 without JIT for git alone.
  std::set<std::string> expected = {
      "/run/chock/git/view", "/run/chock/git/repo/objects", "/run/chock/git/common", "/run/chock/git/admin",
      "/run/chock/cache",    "/run/chock/scratch",          "/run/chock/bin/git"};
  if (exists(f.project() + "/.git/hooks")) expected.insert("/run/chock/git/view/hooks");
  EXPECT_EQ(mounts_of({}), expected);
  expected.insert("/run/chock/bin/chock-connect");
  EXPECT_EQ(mounts_of({"--net", "filtered"}), expected);
}

}  // namespace
}  // namespace chock::test::ws
