// Landlock through the library: a config whose Landlock rules are narrower
// than its mounts, so every refusal here is Landlock's alone (the bind is
// read-write and the directory modes allow everything).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cerrno>
#include <string>
#include <vector>

#include "chock/sandbox.hpp"
#include "process.hpp"

namespace chock::test {
namespace {

class LandlockThroughLibrary : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* sub : {"granted", "granted2", "ro"}) {
      const std::string path = ws_ / sub;
      ASSERT_EQ(mkdir(path.c_str(), 0777), 0);
      ASSERT_EQ(chmod(path.c_str(), 0777), 0);  // the umask would narrow it
    }
    ASSERT_EQ(chmod(ws_.path().c_str(), 0777), 0);
    for (const char* file : {"granted/file", "granted/a", "granted/b", "ro/file"}) {
      write_file(ws_ / file, "content", 0666);
      ASSERT_EQ(chmod((ws_ / file).c_str(), 0666), 0);
    }
  }

  // Runs `attack CASE PATHS...` with the workspace bound read-write at
  // kInside but Landlock granting only granted/ and granted2/ (read-write) and
  // ro/. (Not at its own path: that is under /tmp, which is read-write.)
  Result attack(const std::string& attack_case, const std::vector<std::string>& paths) {
    Config config;
    config.argv = {program("attack"), attack_case};
    config.argv.insert(config.argv.end(), paths.begin(), paths.end());
    config.binds = {Bind{stage_dir(), "", Access::read_only}, Bind{ws_.path(), kInside, Access::read_write}};
    config.landlock_grants = std::vector<Grant>{
        {stage_dir(), Access::read_only},
        {in("granted"), Access::read_write},
        {in("granted2"), Access::read_write},
        {in("ro"), Access::read_only},
    };
    auto result = run(config);
    EXPECT_TRUE(result) << (result ? "" : result.error().message());
    if (!result) return Result{};
    EXPECT_FALSE(result->setup_failure)
        << result->setup_failure->step << ": " << result->setup_failure->detail;
    EXPECT_GT(result->landlock.abi, 0);
    return *result;
  }

  static std::string in(const std::string& rel) { return std::string(kInside) + "/" + rel; }

  static constexpr const char* kInside = "/landlock-ws";
  TempDir ws_{"chock-landlock-lib"};
};

int status(const Result& r) {
  return r.exit_status();
}

TEST_F(LandlockThroughLibrary, WriteOutsideTheGrantsIsEacces) {
  EXPECT_EQ(status(attack("create_file", {in("outside.txt")})), EACCES);
  EXPECT_FALSE(exists(ws_ / "outside.txt"));
  EXPECT_EQ(status(attack("create_file", {in("granted/new.txt")})), 0);
  EXPECT_TRUE(exists(ws_ / "granted/new.txt"));
}

TEST_F(LandlockThroughLibrary, TruncateIsRefusedOutsideAReadWriteGrant) {
  EXPECT_EQ(status(attack("truncate", {in("ro/file")})), EACCES);
  EXPECT_EQ(read_file(ws_ / "ro/file"), "content");
  EXPECT_EQ(status(attack("truncate", {in("granted/file")})), 0);
  EXPECT_EQ(read_file(ws_ / "granted/file"), "");
}

TEST_F(LandlockThroughLibrary, RenameAcrossGrantsIsRefusedUnlessBothAreReadWrite) {
  // Into a read-only grant, and out of one.
  EXPECT_EQ(status(attack("rename", {in("granted/a"), in("ro/a")})), EACCES);
  EXPECT_EQ(status(attack("rename", {in("ro/file"), in("granted/file-from-ro")})), EACCES);
  EXPECT_TRUE(exists(ws_ / "granted/a"));
  EXPECT_TRUE(exists(ws_ / "ro/file"));
  // Between two read-write grants: refer is in the read-write set.
  EXPECT_EQ(status(attack("rename", {in("granted/b"), in("granted2/b")})), 0);
  EXPECT_TRUE(exists(ws_ / "granted2/b"));
}

TEST_F(LandlockThroughLibrary, MknodOfADeviceIsRefused) {
  EXPECT_EQ(status(attack("mknod_char", {in("granted/chr")})), EACCES);
  EXPECT_FALSE(exists(ws_ / "granted/chr"));
  EXPECT_EQ(status(attack("mknod_fifo", {in("granted/fifo")})), 0);
}

TEST_F(LandlockThroughLibrary, ReportsTheAbiAndWhatItHandles) {
  const Result r = attack("read_file", {in("ro/file")});
  EXPECT_EQ(status(r), 0);
  EXPECT_NE(r.landlock.handled, 0U);
  if (r.landlock.abi >= 5) {
    EXPECT_TRUE(r.landlock.missing.empty());
  }
  if (r.landlock.abi >= 6) {
    EXPECT_TRUE(r.landlock.scoped_abstract_unix && r.landlock.scoped_signals);
  }
  EXPECT_NE(r.to_json().find("\"landlock\""), std::string::npos);
}

}  // namespace
}  // namespace chock::test
