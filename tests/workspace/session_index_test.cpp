// A git session's index (issue 24): by default the base's, read through an
// overlay of the session's admin dir until git writes one of its own; where
// the operator links the base's index, the small half of a split index;
// never a file a call can change for another session or the base.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <nlohmann/json.hpp>

#include "bases_support.hpp"
#include "support.hpp"

namespace chock::test::ws {
namespace {

// The names of git's shared index files (sharedindex.<hash>) in `dir`.
std::vector<std::string> shared_indexes_in(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d))
    if (std::string(e->d_name).rfind("sharedindex.", 0) == 0) out.emplace_back(e->d_name);
  ::closedir(d);
  return out;
}

// A git project of `count` files committed, its base made by a first
// session a second ago: the next session settles it (git trusts the stat
// data of files older than its index by a second: racy git), and splits its index.
void base_a_second_old(Fixture& f, int count, std::size_t bytes) {
  f.init_git();
  many_files(f, count, bytes);
  Output first = f.run({"--keep"}, "true");
  ASSERT_EQ(first.status, 0) << describe(first);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
}

TEST(SessionIndex, GitStatusInAFreshSessionIsCleanAndWritesNoIndex) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(base_a_second_old(f, 300, 16));
  Output second = f.run({"--keep"}, "true");
  ASSERT_EQ(second.status, 0) << describe(second);
  const std::string dir = f.sessions() + "/" + session_id(second);
  const std::string below = dir + "/git/index-below/index";
  struct stat before {};
  ASSERT_EQ(::stat(below.c_str(), &before), 0);
  Output status = f.chock({"run", "--session", session_id(second), "--", "git", "status", "--porcelain"});
  ASSERT_EQ(status.status, 0) << describe(status);
  EXPECT_EQ(status.out, "");
  // Git writes its index when it had to look at a file's bytes: it wrote none.
  EXPECT_FALSE(exists(dir + "/git/admin/index")) << "git status refreshed the index";
  struct stat after {};
  ASSERT_EQ(::stat(below.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
}

// `workspace list` gives session `id` a size that leaves out `linked` (a
// file of the base's it links), which `du` of its directory counts.
void expect_size_leaves_out(const Fixture& f, const std::string& id, const struct stat& linked) {
  Output listed = f.chock({"workspace", "list", "--json"});
  ASSERT_EQ(listed.status, 0) << describe(listed);
  Output du = run_process({"du", "-sk", f.sessions() + "/" + id});
  bool found = false;
  for (const auto& entry : nlohmann::json::parse(listed.out)) {
    if (entry.at("id") != id) continue;
    found = true;
    EXPECT_GE(std::stoll(du.out) * 1024 - entry.at("size_bytes").get<long long>(),
              static_cast<long long>(linked.st_blocks) * 512)
        << "the session's size counts the base's file: " << entry.dump();
  }
  EXPECT_TRUE(found) << listed.out;
}

// The index of `f`'s only base.
std::string base_index(const Fixture& f) {
  const auto made = bases_of(f).bases;
  return made.size() == 1 ? base_dir(f, made.front()) + "/index" : std::string();
}

// By default a session holds no copy of the index: its admin dir inside is
// an overlay over a link to the base's, and git's first write of the index
// (a new file renamed over it) is the session's own, a whole index as
// libgit2 (which reads no split index) and git outside read it.
TEST(SessionIndex, ASessionReadsItsBasesIndexAndHoldsNoCopyOfIt) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(base_a_second_old(f, 300, 8));
  const std::string one = kept_session(f, "git status --porcelain");
  const std::string two = kept_session(f, "git status --porcelain");
  const std::string index = base_index(f);
  ASSERT_FALSE(index.empty());
  struct stat base {};
  ASSERT_EQ(::stat(index.c_str(), &base), 0);
  for (const auto& id : {one, two}) {
    const std::string git = f.sessions() + "/" + id + "/git";
    EXPECT_FALSE(exists(git + "/admin/index")) << id;
    EXPECT_EQ(shared_indexes_in(git + "/admin"), std::vector<std::string>{}) << id;
    struct stat below {};
    ASSERT_EQ(::stat((git + "/index-below/index").c_str(), &below), 0) << id;
    EXPECT_EQ(below.st_ino, base.st_ino) << id;
  }
  EXPECT_FALSE(exists(base_dir(f, bases_of(f).bases.front()) + "/split"));
  const std::string files = std::to_string(lines(git_ok(f.project(), {"ls-files"})).size());
  Output inside = f.chock({"run", "--session", one, "--", "sh", "-c",
                           "stat -f -c %T /run/chock/git/admin && git ls-files | wc -l"});
  ASSERT_EQ(inside.status, 0) << describe(inside);
  EXPECT_EQ(inside.out, "overlayfs\n" + files + "\n");

  // `workspace list` counts a session's own disk: the linked index is the base's.
  ASSERT_NO_FATAL_FAILURE(expect_size_leaves_out(f, two, base));

  // Git's first write: an index of the session's own, every entry in it.
  Output add = f.chock({"run", "--session", one, "--", "sh", "-c",
                        "echo changed > m1/f1 && git add m1/f1 && git diff --cached --name-only"});
  ASSERT_EQ(add.status, 0) << describe(add);
  EXPECT_EQ(add.out, "m1/f1\n");
  const std::string own = f.sessions() + "/" + one + "/git/admin/index";
  EXPECT_EQ(read_file(own).find("link"), std::string::npos);
  Output listed_own = run_process({"env", "GIT_INDEX_FILE=" + own, "git", "-C", f.project(), "ls-files"});
  EXPECT_EQ(listed_own.out, git_ok(f.project(), {"ls-files"}) + "\n");
  Output other = f.chock({"run", "--session", two, "--", "git", "status", "--porcelain"});
  ASSERT_EQ(other.status, 0) << describe(other);
  EXPECT_EQ(other.out, "");
}

// Regression: the index below is the base's file, shared by every session
// at its commit; a call that writes it in place (not git's rename) writes a
// copy of its own session's (overlayfs copies it up), never the base's nor
// another session's; one that removes it leaves its session none.
TEST(SessionIndex, WritingTheIndexInPlaceReachesNeitherTheBaseNorAnotherSession) {
  Fixture f;
  f.init_git();
  many_files(f, 300, 8);
  // The session that made the base links its index as the run uid's git
  // wrote it (not yet settled: a later session would refresh it).
  const std::string one = kept_session(f, "true");
  const std::string index = base_index(f);
  ASSERT_FALSE(index.empty());
  const std::string linked = f.sessions() + "/" + one + "/git/index-below/index";
  struct stat base {};
  ASSERT_EQ(::stat(linked.c_str(), &base), 0);
  struct stat base_now {};
  ASSERT_EQ(::stat(index.c_str(), &base_now), 0);
  ASSERT_EQ(base.st_ino, base_now.st_ino) << "the base's index was replaced already";
  const std::string bytes = read_file(linked);
  const std::string at = "/run/chock/git/admin/index";
  Output attack = f.chock(
      {"run", "--session", one, "--", "sh", "-c",
       "printf garbage >> " + at + " && echo appended; true > " + at + " && echo truncated; chmod 666 " + at +
           " && echo chmodded; git status --porcelain > /dev/null 2>&1 && echo index-read"});
  // The run uid's file: written, in a copy, which the call's git then reads
  // (no bytes: not an index). Where root checked it out, refused.
  if (base.st_uid == (::geteuid() == 0 ? 65534U : ::geteuid())) {
    EXPECT_EQ(attack.out, "appended\ntruncated\nchmodded\n") << describe(attack);
  } else {
    EXPECT_EQ(attack.out, "index-read\n") << describe(attack);
    EXPECT_NE(attack.err.find("Permission denied"), std::string::npos) << describe(attack);
  }
  EXPECT_EQ(read_file(linked), bytes) << "a call wrote the base's index";
  struct stat after {};
  ASSERT_EQ(::stat(linked.c_str(), &after), 0);
  EXPECT_EQ(after.st_mode, base.st_mode);
  EXPECT_EQ(after.st_ino, base.st_ino);
  const std::string files = std::to_string(lines(git_ok(f.project(), {"ls-files"})).size());
  const std::string two = kept_session(f, "true");
  Output other = f.chock({"run", "--session", two, "--", "sh", "-c",
                          "git status --porcelain && git ls-files | wc -l && wc -c < " + at});
  ASSERT_EQ(other.status, 0) << describe(other);
  EXPECT_EQ(other.out, files + "\n" + std::to_string(read_file(base_index(f)).size()) + "\n");

  // Removed: the session reads no index at all (the base's stays hidden)
  // until git writes one again.
  Output removed = f.chock({"run", "--session", one, "--", "sh", "-c",
                            "rm -f " + at + " && test ! -e " + at +
                                " && git ls-files | wc -l && git reset -q && "
                                "git status --porcelain && git ls-files | wc -l"});
  ASSERT_EQ(removed.status, 0) << describe(removed);
  EXPECT_EQ(removed.out, "0\n" + files + "\n");
  EXPECT_EQ(read_file(linked), bytes);
}

// Where the sessions' directory is a file system of its own (mounted apart
// from bases/), no link to the base's index can be made: the session holds
// a copy of it below its admin dir, and its calls go on as anywhere else.
TEST(SessionIndex, ASessionApartFromItsBaseHoldsACopyOfTheIndex) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting the sessions' directory apart needs root";
  Fixture f;
  f.init_git();
  many_files(f, 50, 8);
  ASSERT_FALSE(kept_session(f).empty());  // the base, on the data directory's own file system
  const std::string files = std::to_string(lines(git_ok(f.project(), {"ls-files"})).size());
  const std::string script =
      "set -e; mount -t tmpfs -o mode=0755 chock-test '" + f.sessions() +
      "'; "
      "id=$('" +
      chock_binary() +
      "' run --keep -- true 2>&1 >/dev/null | "
      "sed -n 's/^chock: session \\([a-z0-9]*\\) .*/\\1/p'); "
      "'" +
      chock_binary() +
      "' run --session \"$id\" -- sh -c 'git status --porcelain; git ls-files | wc -l'; "
      "stat -c %h '" +
      f.sessions() + "'/$id/git/index-below/index";
  RunOptions options = f.options();
  options.env["CHOCK_OVERLAY_HOLD_MS"] = "0";  // no holder outlives the mount namespace
  Output apart = run_process({"unshare", "--mount", "--propagation", "private", "sh", "-c", script}, options);
  ASSERT_EQ(apart.status, 0) << describe(apart);
  EXPECT_EQ(apart.out, files + "\n1\n") << describe(apart);
}

// A session made before the index below (its record says nothing of it) has
// an index of its own in its admin dir, bound as it is: its calls go on.
TEST(SessionIndex, ASessionMadeWithAnIndexOfItsOwnKeepsIt) {
  Fixture f;
  ASSERT_NO_FATAL_FAILURE(base_a_second_old(f, 50, 8));
  const std::string id = kept_session(f, "echo changed > m1/f1 && git add m1/f1");
  const std::string dir = f.sessions() + "/" + id;
  auto record = nlohmann::json::parse(read_file(dir + "/session.json"));
  ASSERT_TRUE(record.at("index_below").get<bool>());
  record.erase("index_below");
  write_file(dir + "/session.json", record.dump());
  Output call = f.chock({"run", "--session", id, "--", "sh", "-c",
                         "stat -f -c %T /run/chock/git/admin && git diff --cached --name-only"});
  ASSERT_EQ(call.status, 0) << describe(call);
  EXPECT_NE(call.out.rfind("overlayfs", 0), 0U) << "the admin dir is still an overlay";
  EXPECT_NE(call.out.find("\nm1/f1\n"), std::string::npos) << describe(call);
}

// Where the operator links the base's index (.link_base_index), once the base
// is settled its index is split: each later session copies the small half
// and links the shared one (every entry), bound read-only inside, so a
// session's disk holds no copy of the index and no call changes what the
// other sessions read; git inside works and says nothing of it.
TEST(SessionIndex, SessionsLinkTheBasesSharedIndexWhichNoCallCanChange) {
  Fixture f;
  ASSERT_EQ(::mkdir((f.config() + "/chock").c_str(), 0755), 0);
  write_file(f.config() + "/chock/config.zon", ".{ .link_base_index = true }\n");
  ASSERT_NO_FATAL_FAILURE(base_a_second_old(f, 2000, 8));
  const std::string one = kept_session(f);
  const std::string two = kept_session(f);
  const auto made = bases_of(f).bases;
  ASSERT_EQ(made.size(), 1U);
  const std::string split = base_dir(f, made.front()) + "/split";
  const auto names = shared_indexes_in(split);
  ASSERT_EQ(names.size(), 1U) << "no split index in " << split;
  const std::string& name = names.front();
  struct stat shared {};
  ASSERT_EQ(::stat((split + "/" + name).c_str(), &shared), 0);
  EXPECT_GT(shared.st_size, 100000);
  const std::string bytes = read_file(split + "/" + name);
  for (const auto& id : {one, two}) {
    const std::string admin = f.sessions() + "/" + id + "/git/admin";
    struct stat linked {};
    ASSERT_EQ(::stat((admin + "/" + name).c_str(), &linked), 0);
    EXPECT_EQ(linked.st_ino, shared.st_ino) << id;
    struct stat index {};
    ASSERT_EQ(::stat((admin + "/index").c_str(), &index), 0);
    EXPECT_LT(index.st_size, 1024) << id << ": a copy of every entry";
  }
  // `workspace list` counts a session's own disk: the linked file is the base's.
  ASSERT_NO_FATAL_FAILURE(expect_size_leaves_out(f, two, shared));

  const std::string at = "/run/chock/git/admin/" + name;
  Output attack = f.chock({"run", "--session", one, "--", "sh", "-c",
                           "printf x >> " + at + " || echo write-refused; touch " + at +
                               " || echo time-refused; chmod 600 " + at + " || echo mode-refused; rm -f " +
                               at + " || echo remove-refused; mv " + at +
                               " /run/chock/git/admin/moved || echo rename-refused"});
  EXPECT_EQ(attack.out, "write-refused\ntime-refused\nmode-refused\nremove-refused\nrename-refused\n")
      << describe(attack);
  // A root caller's file is not the run uid's either; an unprivileged
  // caller's is its own, and only the read-only bind stops the write.
  if (::geteuid() != 0) {
    EXPECT_NE(attack.err.find("Read-only file system"), std::string::npos) << attack.err;
  }
  EXPECT_NE(attack.err.find("Device or resource busy"), std::string::npos) << attack.err;

  // The index written with no entry changed (git stash refreshes and writes
  // it first): git's own shared half is never named as the base's, bound here.
  Output stash =
      f.chock({"run", "--session", one, "--", "sh", "-c",
               "echo more >> m3/f3 && git stash -q && git stash pop -q && git status --porcelain && "
               "git checkout -q -- m3/f3"});
  ASSERT_EQ(stash.status, 0) << describe(stash);
  EXPECT_EQ(stash.out, " M m3/f3\n") << describe(stash);

  const std::string files = std::to_string(lines(git_ok(f.project(), {"ls-files"})).size());
  Output work = f.chock({"run", "--session", one, "--", "sh", "-c",
                         "git status --porcelain && echo changed > m1/f1 && git add m1/f1 && "
                         "git commit -qm change && git status --porcelain && git ls-files | wc -l && "
                         "for i in 1 2 3; do echo $i > m2/f2 && git add m2/f2 || exit 9; done && "
                         "ls /run/chock/git/admin | grep -c '^sharedindex\\.'"});
  ASSERT_EQ(work.status, 0) << describe(work);
  // The base's and the last of its own: git keeps no older one.
  EXPECT_EQ(work.out, files + "\n2\n") << describe(work);
  EXPECT_EQ(work.err.find("warning"), std::string::npos) << work.err;

  struct stat after {};
  ASSERT_EQ(::stat((split + "/" + name).c_str(), &after), 0);
  EXPECT_EQ(read_file(split + "/" + name), bytes);
  EXPECT_EQ(after.st_mtim.tv_sec, shared.st_mtim.tv_sec);
  EXPECT_EQ(after.st_mode, shared.st_mode);
  Output other = f.chock({"run", "--session", two, "--", "sh", "-c",
                          "git status --porcelain && git log -1 --format=%s && cat m1/f1"});
  ASSERT_EQ(other.status, 0) << describe(other);
  EXPECT_EQ(other.out, "many\nbbbbbbbb");
}

// Regression: with the repository's own config splitting its index, Chock's
// git wrote the shared part into the real .git, and the session's index named
// a file its git dir did not have (the call's `git status` exited 128).
TEST(SessionIndex, ARepositoryThatSplitsItsIndexGetsNoFileFromChocksGit) {
  Fixture f;
  f.init_git();
  many_files(f, 50, 8);
  git_ok(f.project(), {"config", "core.splitIndex", "true"});
  const auto shared_files = [&] { return shared_indexes_in(f.file(".git")); };
  ASSERT_TRUE(shared_files().empty());
  Output first = f.run({"--keep"}, "git status --porcelain");
  ASSERT_EQ(first.status, 0) << describe(first);
  EXPECT_EQ(first.out, "");
  // The base's index is refreshed by the next session once a second has passed.
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  Output second =
      f.run({"--keep"},
            "git status --porcelain && echo x > m1/f1 && git add m1/f1 && git diff --cached --name-only");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(second.out, "m1/f1\n");
  EXPECT_EQ(shared_files(), std::vector<std::string>{});
}

}  // namespace
}  // namespace chock::test::ws
