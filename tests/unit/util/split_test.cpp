// Splitting text: PATH entries, a path's names, a program's output lines.
#include <gtest/gtest.h>

#include "util/split.hpp"

namespace chock {
namespace {

using Parts = std::vector<std::string>;

TEST(Split, EmptyPartsAreDropped) {
  EXPECT_EQ(split_nonempty("/usr/bin::/bin:", ':'), (Parts{"/usr/bin", "/bin"}));
  EXPECT_EQ(split_nonempty("//a/b//", '/'), (Parts{"a", "b"}));
  EXPECT_EQ(split_nonempty("", '/'), Parts{});
}

TEST(Split, OutputLinesKeepWhatATerminalWouldShowLast) {
  EXPECT_EQ(output_lines("chock: a\n\rchock: 1 of 2\rchock: 2 of 2\n\nlast"),
            (Parts{"chock: a", "chock: 2 of 2", "last"}));
  EXPECT_EQ(output_lines("progress\r\n"), Parts{});
}

}  // namespace
}  // namespace chock
