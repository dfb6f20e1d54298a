// The knowledgebase: notes written and read back through the memory tools'
// own sandboxed call, versions kept, every limit refused with its name, the
// policy row obeyed, and /run/chock/memory absent from every other call.
#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "chock/sandbox.hpp"
#include "support.hpp"
#include "tools/memory_store.hpp"
#include "util/fd.hpp"

namespace chock::test::ws {
namespace {

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void allow_writes(Fixture& f, const char* decision = "allow") {
  write_file(f.file("chock.zon"), std::string(".{ .policy = .{ .rules = .{ .{ .action = \"memory.write\", "
                                              ".decision = .") +
                                      decision + " } } } }\n");
  f.commit_all("memory rule");
}

Output write_note(const Fixture& f, const std::string& name, const std::string& body,
                  const std::string& kind = "gotcha", const std::string& description = "a test note") {
  return f.chock({"memory", "write", name, "--kind", kind, "--description", description}, body);
}

TEST(Memory, ANoteIsReadBackWithEveryVersion) {
  Fixture f;
  f.init_git();
  allow_writes(f);
  auto first = write_note(f, "build-cmd", "make -j\n", "convention", "how to build");
  ASSERT_EQ(first.status, 0) << describe(first);
  EXPECT_EQ(first.out, "chock: the note build-cmd is at version 1\n");
  auto second = write_note(f, "build-cmd", "ninja\n", "convention", "how to build, now");
  ASSERT_EQ(second.status, 0) << describe(second);
  EXPECT_EQ(f.chock({"memory", "read", "build-cmd"}).out, "ninja\n");
  auto old = f.chock({"memory", "read", "build-cmd", "--version", "1"});
  EXPECT_EQ(old.out, "make -j\n");
  EXPECT_TRUE(has(old.err, "version 1 of ")) << old.err;
  auto list = f.chock({"memory", "list"});
  EXPECT_TRUE(has(list.out, "build-cmd") && has(list.out, "v2") && has(list.out, "how to build, now"))
      << list.out;
  auto missing = f.chock({"memory", "read", "build-cmd", "--version", "3"});
  EXPECT_EQ(missing.status, 2);
  EXPECT_TRUE(has(missing.err, "the note build-cmd has no version 3 (it has 1 to 2)")) << missing.err;
}

TEST(Memory, EveryLimitIsRefusedWithItsName) {
  Fixture f;
  f.init_git();
  allow_writes(f);
  auto bad_name = write_note(f, "Bad.Name", "x");
  EXPECT_EQ(bad_name.status, 2);
  EXPECT_TRUE(has(bad_name.err, "a note's name is made of a-z, 0-9, '_' and '-'")) << bad_name.err;
  auto long_name = write_note(f, std::string(65, 'a'), "x");
  EXPECT_TRUE(has(long_name.err, "1 to 64 bytes")) << long_name.err;
  auto kind = write_note(f, "n", "x", "rumour");
  EXPECT_TRUE(has(kind.err, "a note's kind is one of insight")) << kind.err;
  auto big = write_note(f, "n", std::string((16 << 10) + 1, 'x'));
  EXPECT_EQ(big.status, 2);
  EXPECT_TRUE(has(big.err, "at most 16 KiB")) << big.err;
  for (int v = 1; v <= 16; ++v) ASSERT_EQ(write_note(f, "many", std::to_string(v)).status, 0) << v;
  auto seventeenth = write_note(f, "many", "17");
  EXPECT_EQ(seventeenth.status, 2);
  EXPECT_TRUE(has(seventeenth.err, "has 16 versions, the most kept, and the oldest is never dropped"))
      << seventeenth.err;
  EXPECT_EQ(f.chock({"memory", "read", "many", "--version", "1"}).out, "1");
  for (int i = 1; i < 128; ++i) ASSERT_EQ(write_note(f, "note-" + std::to_string(i), "x").status, 0) << i;
  auto past = write_note(f, "one-too-many", "x");
  EXPECT_EQ(past.status, 2);
  EXPECT_TRUE(has(past.err, "the knowledgebase holds 128 notes, the most it keeps")) << past.err;
  EXPECT_EQ(write_note(f, "note-1", "a second version").status, 0);  // a known name still takes versions
}

TEST(Memory, WritesFollowThePolicyRow) {
  Fixture f;
  f.init_git();
  auto asks = write_note(f, "n", "x");  // nobody to ask here
  EXPECT_EQ(asks.status, 1);
  EXPECT_TRUE(has(asks.err, "memory.write asks, and nobody is here to answer")) << asks.err;
  allow_writes(f, "deny");
  auto denied = write_note(f, "n", "x");
  EXPECT_EQ(denied.status, 1);
  EXPECT_TRUE(has(denied.err, "memory.write is denied by ")) << denied.err;
  EXPECT_EQ(f.chock({"memory", "list"}).out, "");
}

// `ask` is put to the person at the terminal: the answer, then the body.
TEST(Memory, AWriteThatAsksIsAnsweredAtTheTerminal) {
  Fixture f;
  f.init_git();
  auto no = f.on_terminal({"memory", "write", "asked", "--kind", "insight", "--description", "d"}, "n\n");
  EXPECT_TRUE(has(no.out, "memory.write asks: go ahead?")) << no.out;
  EXPECT_TRUE(has(no.out, "refused: you answered no")) << no.out;
  auto yes = f.on_terminal({"memory", "write", "asked", "--kind", "insight", "--description", "d"},
                           "y\nwritten at a terminal\n\x04");
  EXPECT_EQ(yes.status, 0) << describe(yes);
  EXPECT_TRUE(has(yes.out, "the note asked is at version 1")) << yes.out;
  EXPECT_EQ(f.chock({"memory", "read", "asked"}).out, "written at a terminal\n");
}

TEST(Memory, TheKnowledgebaseIsAbsentFromAnOrdinaryCall) {
  Fixture f;
  f.init_git();
  allow_writes(f);
  ASSERT_EQ(write_note(f, "secret-plan", "only through the tools\n").status, 0);
  auto out =
      f.run({},
            "test -e /run/chock/memory; echo \"memory $?\"; ls /run/chock; "
            "grep -rl 'only through the tools' /run /tmp /var/tmp \"$HOME\" \"$PWD\" 2>/dev/null; true");
  EXPECT_EQ(out.status, 0) << describe(out);
  EXPECT_TRUE(has(out.out, "memory 1\n")) << out.out;
  EXPECT_FALSE(has(out.out, "secret-plan")) << out.out;
  EXPECT_FALSE(has(out.out, "/run/chock/memory")) << out.out;
}

// The memory call's mount table, as the call itself reads it: below
// /run/chock only the knowledgebase and the tool (docs/mounts.md), and no
// workspace, cache or scratchpad.
TEST(Memory, TheMemoryCallsMountsAreTheTablesRow) {
  TempDir dir("chock-memory-call");
  int out[2];
  ASSERT_EQ(::pipe2(out, O_CLOEXEC), 0);
  UniqueFd read_end(out[0]), write_end(out[1]);
  Config c = tools::memory_call(chock_binary(), dir.path(), {"list"});
  c.argv = {"/bin/sh", "-c", "grep -o ' /run/chock[^ ]*' /proc/self/mountinfo | sort; echo \"HOME=$HOME\""};
  c.stdio = {0, write_end.get(), 2};
  auto r = run(c);
  ASSERT_TRUE(r) << r.error().message();
  write_end.reset();
  std::string printed(4096, '\0');
  const ssize_t n = ::read(read_end.get(), printed.data(), printed.size());
  printed.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
  EXPECT_EQ(r->exit_status(), 0);
  EXPECT_EQ(printed, " /run/chock/bin/chock\n /run/chock/memory\nHOME=\n") << printed;
}

}  // namespace
}  // namespace chock::test::ws
