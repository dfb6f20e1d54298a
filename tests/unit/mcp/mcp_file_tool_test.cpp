// The MCP file tools' program, on a directory of its own: every path stays
// below the project, whatever `..`, an absolute path or a link says.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mcp/file_tool.hpp"
#include "process.hpp"

namespace chock::mcp {
namespace {

using test::TempDir;

class FileTool : public ::testing::Test {
 protected:
  void SetUp() override {
    ::mkdir((dir_ / "p").c_str(), 0755);
    ::mkdir((dir_ / "p/src").c_str(), 0755);
    test::write_file(dir_ / "p/src/main.c", "int main(void) {\n  return 0;\n}\n");
    test::write_file(dir_ / "outside.txt", "secret\n");
    ASSERT_EQ(::symlink((dir_ / "outside.txt").c_str(), (dir_ / "p/link").c_str()), 0);
    ASSERT_EQ(::symlink("src/main.c", (dir_ / "p/inner").c_str()), 0);
    ASSERT_EQ(::mkfifo((dir_ / "p/fifo").c_str(), 0644), 0);
  }
  Json op(Json request) { return file_tool(request, project()); }
  std::string project() const { return dir_ / "p"; }
  TempDir dir_{"chock-file-tool"};
};

TEST_F(FileTool, ReadsLinesFromAnOffset) {
  Json r = op({{"op", "read"}, {"path", "src/main.c"}, {"offset", 2}, {"limit", 1}});
  EXPECT_EQ(r["content"], "  return 0;\n");
  EXPECT_EQ(r["total_lines"], 3);
  EXPECT_TRUE(r["truncated"]);
  // A link that stays below the project is followed.
  EXPECT_EQ(op({{"op", "read"}, {"path", "inner"}})["lines"], 3);
  EXPECT_EQ(op({{"op", "read"}, {"path", project() + "/src/main.c"}})["lines"], 3);
}

TEST_F(FileTool, NoPathLeadsOutOfTheProject) {
  for (const std::string& path : {std::string("../outside.txt"), std::string("link"), dir_ / "outside.txt",
                                  std::string("/etc/passwd"), std::string("src/../../outside.txt")}) {
    for (const char* kind : {"read", "write", "edit", "list", "grep"}) {
      Json r = op({{"op", kind},
                   {"path", path},
                   {"content", "x"},
                   {"old_string", "s"},
                   {"new_string", "t"},
                   {"pattern", "s"}});
      ASSERT_TRUE(r.contains("error")) << kind << " " << path << ": " << r.dump();
      EXPECT_TRUE(r["error"].get<std::string>().find("outside the project") != std::string::npos ||
                  r["error"].get<std::string>().find("leads outside") != std::string::npos)
          << r.dump();
    }
  }
  EXPECT_EQ(test::read_file(dir_ / "outside.txt"), "secret\n");
  EXPECT_TRUE(op({{"op", "glob"}, {"pattern", "../*"}}).contains("error"));
  // A link inside is written through, as a program would; new directories are made.
  EXPECT_TRUE(op({{"op", "write"}, {"path", "inner"}, {"content", "via the link\n"}}).contains("bytes"));
  EXPECT_EQ(test::read_file(dir_ / "p/src/main.c"), "via the link\n");
  struct stat st {};
  EXPECT_EQ(::lstat((dir_ / "p/inner").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_TRUE(op({{"op", "write"}, {"path", "src/new/deep.txt"}, {"content", "d"}}).contains("bytes"));
  EXPECT_EQ(test::read_file(dir_ / "p/src/new/deep.txt"), "d");
}

TEST_F(FileTool, AFifoIsNotWaitedOnAndAnEditNeedsOneMatch) {
  EXPECT_NE(op({{"op", "read"}, {"path", "fifo"}})["error"].get<std::string>().find("not a regular file"),
            std::string::npos);
  EXPECT_NE(op({{"op", "edit"}, {"path", "src/main.c"}, {"old_string", "n"}, {"new_string", "N"}})["error"]
                .get<std::string>()
                .find("occurs 3 times"),
            std::string::npos);
  EXPECT_EQ(op({{"op", "edit"},
                {"path", "src/main.c"},
                {"old_string", "return 0"},
                {"new_string", "return 1"}})["replaced"],
            1);
  EXPECT_EQ(test::read_file(dir_ / "p/src/main.c"), "int main(void) {\n  return 1;\n}\n");
}

TEST_F(FileTool, GlobAndGrepWalkWithoutFollowingLinks) {
  Json g = op({{"op", "glob"}, {"pattern", "**/*.c"}});
  EXPECT_EQ(g["paths"], Json::array({"src/main.c"}));
  Json m = op({{"op", "grep"}, {"pattern", "secret|return"}});
  EXPECT_EQ(m["matches"], Json::array({"src/main.c:2:  return 0;"}));
  Json l = op({{"op", "list"}, {"path", "."}});
  EXPECT_EQ(l["entries"].size(), 4U);
}

}  // namespace
}  // namespace chock::mcp
