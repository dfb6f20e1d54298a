// Files of Chock's own written into a call's root (Config::files_inside, the
// git preload): readable inside, never writable there, and never written
// into a host directory: one a mount would hide is refused.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <string>

#include "chock/sandbox.hpp"
#include "process.hpp"
#include "support.hpp"

namespace chock {
namespace {

using test::core::trim;

// Runs `script` with `config`; what it wrote to $OUT (a file in a directory
// bound read-write), or what went wrong.
std::string run_with(Config config, const std::string& script) {
  test::TempDir dir;
  chmod(dir.path().c_str(), 0777);
  const std::string out = dir / "out";
  config.binds.push_back(Bind{dir.path(), dir.path(), Access::read_write});
  config.argv = {"/bin/sh", "-c", "{ " + script + "; } > " + out + " 2>&1"};
  auto child = spawn(config);
  if (!child) return "spawn: " + child.error().message();
  const Result r = child->wait();
  if (r.exit_status() != 0) return "status " + std::to_string(r.exit_status()) + ": " + r.to_json();
  return test::exists(out) ? trim(test::read_file(out)) : "no " + out;
}

TEST(FilesInside, AFileOfChocksOwnIsReadInsideAndItsWriteIsRefusedWithErofs) {
  Config config;
  config.files_inside.push_back(FileInside{"/run/chock/lib/own.txt", "carried\n"});
  const std::string seen =
      run_with(config,
               "cat /run/chock/lib/own.txt; stat -c %a /run/chock/lib/own.txt; "
               "echo x > /run/chock/lib/own.txt || echo write refused; "
               "rm -f /run/chock/lib/own.txt || echo remove refused; cat /run/chock/lib/own.txt");
  EXPECT_EQ(seen,
            "carried\n444\n/bin/sh: 1: cannot create /run/chock/lib/own.txt: Read-only file system\n"
            "write refused\nrm: cannot remove '/run/chock/lib/own.txt': Read-only file system\n"
            "remove refused\ncarried");
}

TEST(FilesInside, AFileBelowAHostBindIsRefusedAndNeverWrittenIntoTheHostDirectory) {
  test::TempDir host;
  chmod(host.path().c_str(), 0777);
  test::write_file(host / "host.txt", "the host's\n");
  for (const std::string& at : {std::string("/run/chock/lib"), std::string("/run/chock/lib/own.txt")}) {
    Config config;
    config.argv = {"/bin/true"};
    config.files_inside.push_back(FileInside{"/run/chock/lib/own.txt", "carried\n"});
    config.binds.push_back(Bind{host.path(), at, Access::read_write});
    auto child = spawn(config);
    ASSERT_FALSE(child) << at;
    EXPECT_EQ(child.error().message(),
              "a file inside (/run/chock/lib/own.txt): --rw " + host.path() + " is mounted over it");
    EXPECT_FALSE(test::exists(host / "own.txt")) << "Chock's own file was written into a host directory";
  }
  // The neighbours: the same file where no mount lies over it, and a bind beside it.
  Config beside;
  beside.files_inside.push_back(FileInside{"/run/chock/lib/own.txt", "carried\n"});
  beside.binds.push_back(Bind{host.path(), "/run/chock/other", Access::read_write});
  EXPECT_EQ(run_with(beside, "ls /run/chock/lib /run/chock/other"),
            "/run/chock/lib:\nown.txt\n\n/run/chock/other:\nhost.txt");
  EXPECT_FALSE(test::exists(host / "own.txt"));
}

TEST(FilesInside, ARelativePlaceIsRefusedBeforeAnythingRuns) {
  Config config;
  config.argv = {"/bin/true"};
  config.files_inside.push_back(FileInside{"run/chock/lib/own.txt", "x"});
  auto child = spawn(config);
  ASSERT_FALSE(child);
  EXPECT_EQ(child.error().message(), "a file inside (run/chock/lib/own.txt): needs an absolute path");
}

}  // namespace
}  // namespace chock
