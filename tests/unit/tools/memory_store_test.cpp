// The knowledgebase's files, read by the memory tool: versions newest first,
// a body of any bytes kept whole, and a file that is not in the format (a
// length past its end, a missing header) refused rather than half read.
#include <gtest/gtest.h>

#include "process.hpp"
#include "tools/memory_store.hpp"

namespace chock::tools {
namespace {

Note note(const std::string& name, const std::string& body) {
  return Note{name, "gotcha", 0, "2026-12-04T00:00:00Z", "abcd1234", "a note", body};
}

TEST(MemoryStore, KeepsEveryVersionAndAnyBytesOfABody) {
  test::TempDir dir("chock-memory");
  const std::string tricky = std::string("line\n\nchock-note 1\nname: x\n\0\xff", 27);
  ASSERT_EQ(*write_note(dir.path(), note("n", "first")), 1);
  ASSERT_EQ(*write_note(dir.path(), note("n", tricky)), 2);
  EXPECT_EQ(read_note(dir.path(), "n", std::nullopt)->body, tricky);
  EXPECT_EQ(read_note(dir.path(), "n", 1)->body, "first");
  auto all = list_notes(dir.path());
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 1U);
  EXPECT_EQ((*all)[0].version, 2);
  EXPECT_TRUE((*all)[0].body.empty());
}

TEST(MemoryStore, AFileNotInTheFormatIsRefused) {
  test::TempDir dir("chock-memory");
  test::write_file(dir / "n", "chock-note 1\nname: n\nbytes: 999999\n\nshort\n");
  EXPECT_FALSE(read_note(dir.path(), "n", std::nullopt));
  test::write_file(dir / "m", "not a note at all\n");
  EXPECT_FALSE(read_note(dir.path(), "m", std::nullopt));
  EXPECT_FALSE(list_notes(dir.path()));
}

}  // namespace
}  // namespace chock::tools
