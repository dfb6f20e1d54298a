// A project with a Nix dev shell gets the shell's closure as its toolchain:
// each store path at its own path and nothing else of the store, PATH and
// the shell's variables as the shell sets them, the answer kept until the
// file that defines the shell changes. Nothing is fetched: the store paths
// are the tests' own (bash-static and busybox added with nix-store --add,
// and a derivation built from them with builtins.derivation), and every run
// has NIX_CONFIG="substituters =" so Nix never asks a binary cache. Nix's
// own settings are Debian's (nix-setup-systemd's /etc/nix/nix.conf:
// `sandbox = false`, builds as the nixbld users); root uses the store
// directly, the unprivileged run reaches it through nix-daemon, which
// scripts/install-deps starts where systemd does not, as a member of
// nix-users (tests/support/as-user.sh keeps that one group).
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "nix_support.hpp"

namespace chock::test::ws {
namespace {

TEST_F(NixToolchain, PathFindsTheShellsToolAndNothingElseOfTheStoreIsThere) {
  write_shell();
  allow();
  auto r = run(std::string("command -v hello; hello; echo \"$GREETING $HOME\"; ls /nix; ls /nix/store; ") +
               "test -e /nix/var; echo \"var $?\"; test -e " + outside_ + "/marker; echo \"outside $?\"; " +
               "test -e /usr/lib; echo \"usr $?\"; readlink /proc/self/exe");
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "chock: toolchain: the Nix dev shell of " + f.file("shell.nix"))) << describe(r);
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_TRUE(line.starts_with("/nix/store/") && line.ends_with("-chock-test-tool/bin/hello")) << r.out;
  std::getline(lines, line);
  EXPECT_EQ(line, "hello from the dev shell");
  std::getline(lines, line);
  EXPECT_EQ(line, "from shell.nix /run/chock/cache/home");  // Chock's HOME wins over the shell's
  std::getline(lines, line);
  EXPECT_EQ(line, "store");  // /nix has the store and nothing else
  std::vector<std::string> listed;
  while (std::getline(lines, line) && !line.starts_with("var ")) listed.push_back(line);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, closure()) << r.out;
  EXPECT_EQ(std::count(listed.begin(), listed.end(), bash_.substr(11)), 1) << "the tool's interpreter";
  EXPECT_EQ(line, "var 1");
  std::getline(lines, line);
  EXPECT_EQ(line, "outside 1") << "a store path outside the closure is there";
  std::getline(lines, line);
  EXPECT_EQ(line, "usr 1") << "the host's /usr/lib is there";
  std::getline(lines, line);
  EXPECT_TRUE(line.ends_with("/bin/busybox")) << "/bin/sh is the closure's: " << line;
  // The host has the store path the call lacked.
  EXPECT_EQ(::access((outside_ + "/marker").c_str(), R_OK), 0);
}

// A flake's devShells.<system>.default, evaluated in pure mode: its tools
// come from the flake's own source, copied into the store by Nix.
TEST_F(NixToolchain, AFlakesDevShellIsTheToolchainToo) {
  ASSERT_EQ(::mkdir(f.file("tools").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(f.file("tools/bin").c_str(), 0755), 0);
  for (const auto& [from, to] : {std::pair{kBashStatic, "bash"}, std::pair{kBusybox, "busybox"}}) {
    std::ifstream in(from, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    write_file(f.file(std::string("tools/bin/") + to), bytes.str(), 0755);
  }
  ASSERT_EQ(::symlink("busybox", f.file("tools/bin/sh").c_str()), 0);
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  const std::string system = std::string(u.machine) + "-linux";  // as Chock names it: x86_64-linux
  write_file(f.file("flake.nix"),
             "{\n  outputs = { self }: let\n    tools = \"${self}/tools\";\n  in {\n"
             "    devShells." +
                 system + ".default = derivation {\n      system = \"" + system +
                 "\";\n"
                 "      name = \"chock-test-flake-shell\";\n      builder = \"${tools}/bin/bash\";\n"
                 "      args = [ \"-c\" \"echo > $out\" ];\n      outputs = [ \"out\" ];\n"
                 "      PATH = \"${tools}/bin\";\n      GREETING = \"from flake.nix\";\n    };\n  };\n}\n");
  allow();
  auto r = run("echo \"$GREETING\"; echo \"$PATH\"; test -e /usr/lib; echo \"usr $?\"");
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_TRUE(has(r.err, "chock: toolchain: the Nix dev shell of " + f.file("flake.nix"))) << describe(r);
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "from flake.nix");
  std::getline(lines, line);
  EXPECT_TRUE(line.starts_with("/nix/store/") && line.ends_with("/tools/bin")) << r.out;
  std::getline(lines, line);
  EXPECT_EQ(line, "usr 1");
  // The lock file is part of what defines the shell: a new one is evaluated again.
  const int runs = nix_runs();
  EXPECT_EQ(run("true").status, 0);
  EXPECT_EQ(nix_runs(), runs) << "an unchanged flake was evaluated again";
  write_file(f.file("flake.lock"),
             "{\n  \"nodes\": { \"root\": {} },\n  \"root\": \"root\",\n  \"version\": 7\n}\n");
  allow();  // a new lock is new content
  auto relocked = run("echo \"$GREETING\"");
  EXPECT_EQ(relocked.status, 0) << describe(relocked);
  EXPECT_EQ(relocked.out, "from flake.nix\n");
  EXPECT_GT(nix_runs(), runs) << "a changed flake.lock was not evaluated again";
}

TEST_F(NixToolchain, WritesUnderTheStoreFailReadOnly) {
  write_shell();
  allow();
  auto r =
      run("touch /nix/store/new; touch \"$(dirname \"$(dirname \"$(command -v hello)\")\")/new\"; "
          "echo done");
  ASSERT_EQ(r.status, 0) << describe(r);
  EXPECT_EQ(r.out, "done\n");
  // busybox's touch says strerror(EROFS) for each.
  std::size_t count = 0;
  for (std::size_t at = r.err.find("Read-only file system"); at != std::string::npos;
       at = r.err.find("Read-only file system", at + 1))
    ++count;
  EXPECT_EQ(count, 2U) << describe(r);
}

TEST_F(NixToolchain, ASecondCallAsksNixNothingAndAChangedShellIsEvaluatedAgain) {
  write_shell();
  allow();
  auto first = run("hello");
  ASSERT_EQ(first.status, 0) << describe(first);
  const int after_first = nix_runs();
  EXPECT_GE(after_first, 2) << "print-dev-env and the closure's query";
  auto second = run("hello");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(nix_runs(), after_first) << "the second call ran Nix";
  EXPECT_FALSE(has(second.err, "toolchain:")) << describe(second);
  write_shell("changed");
  allow();
  auto third = run("hello");
  ASSERT_EQ(third.status, 0) << describe(third);
  EXPECT_GT(nix_runs(), after_first) << "a changed shell.nix was not evaluated again";
  // Only the shell's present form is kept (its profile roots the closure for Nix's collector).
  auto kept = run_process({"sh", "-c", "ls " + f.data() + "/chock/toolchains/* | cut -c1-16 | sort -u"});
  EXPECT_EQ(std::count(kept.out.begin(), kept.out.end(), '\n'), 1) << kept.out;
  EXPECT_TRUE(has(third.err, "chock: toolchain:")) << describe(third);
  // `chock cache clear` forgets the answer too.
  auto cleared = chock({"cache", "clear"});
  EXPECT_EQ(cleared.status, 0) << describe(cleared);
  EXPECT_TRUE(has(cleared.out, "evaluated again")) << describe(cleared);
  const int before = nix_runs();
  auto fourth = run("hello");
  EXPECT_EQ(fourth.status, 0) << describe(fourth);
  EXPECT_GT(nix_runs(), before);
}

TEST_F(NixToolchain, ABrokenShellNixIsOneClearLineAndRunsNothing) {
  write_file(f.file("shell.nix"), "let x = 1; in\n  builtins.derivation { name = \"x\";\n");
  allow();
  auto r = run("echo ran > /tmp/ran; echo ran");
  EXPECT_EQ(r.status, 125) << describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(has(r.err, "chock: " + f.file("shell.nix") + ": the Nix dev shell did not evaluate: error: "))
      << describe(r);
  EXPECT_TRUE(has(r.err, "syntax error")) << describe(r);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << describe(r);
  auto sessions = run_process({"sh", "-c", "ls -A '" + f.sessions() + "' 2>/dev/null"});
  EXPECT_EQ(sessions.out, "") << "a session was made";
}

TEST_F(NixToolchain, WithoutADevShellOrWithHostToolchainTheHostsToolchainStays) {
  auto plain = run("test -d /usr/lib && test ! -e /nix && echo host");
  ASSERT_EQ(plain.status, 0) << describe(plain);
  EXPECT_EQ(plain.out, "host\n");
  EXPECT_EQ(nix_runs(), 0) << "Nix was asked about a project without a dev shell";
  write_shell();
  auto chosen = run("test -d /usr/lib && test ! -e /nix && echo host", {"--host-toolchain"});
  ASSERT_EQ(chosen.status, 0) << describe(chosen);
  EXPECT_EQ(chosen.out, "host\n");
  EXPECT_EQ(nix_runs(), 0) << "--host-toolchain asked Nix";
}

TEST_F(NixToolchain, DoctorSaysWhichToolchainAndWhereItsAnswerIsKept) {
  write_shell();
  auto row_of = [this] {
    auto r = chock({"doctor"});
    std::string row;
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);)
      if (l.find(" toolchain ") != std::string::npos) row = l;
    return row.empty() ? r.out + r.err : row;
  };
  // Content nobody allowed: the doctor evaluates nothing either, and says how to allow it.
  const std::string before = row_of();
  EXPECT_TRUE(has(before, "the Nix dev shell of " + f.file("shell.nix") + " is not evaluated")) << before;
  EXPECT_TRUE(has(before, "never allowed") && has(before, "chock toolchain allow --project")) << before;
  EXPECT_EQ(evaluations(), 0) << "doctor evaluated a shell nobody allowed";
  allow();
  const std::string row = row_of();
  EXPECT_TRUE(has(row, "the Nix dev shell of " + f.file("shell.nix") + " (its content allowed)")) << row;
  EXPECT_TRUE(has(row, "store paths") && has(row, "evaluated in") &&
              has(row, f.data() + "/chock/toolchains/"))
      << row;
}

}  // namespace
}  // namespace chock::test::ws
