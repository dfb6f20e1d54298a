// The line a new git session says first when the project holds installed
// dependencies it does not carry: the exact .carry row of chock.zon to add,
// with the project's own rows kept.
#include <gtest/gtest.h>

#include "session/call_config.hpp"

namespace chock::session {
namespace {

TEST(UncarriedLine, NamesTheRowToAdd) {
  config::ProjectFile none;
  EXPECT_EQ(
      uncarried_line({"node_modules"}, none),
      "node_modules is in the project and ignored by git, so this git workspace lacks it and a program "
      "that needs it fails (\"mocha: not found\", \"Cannot find module\", \"No module named\"); to carry "
      "it in copy-on-write, add .carry = .{ \"node_modules\" } to chock.zon (or run with --carry "
      "node_modules)");
}

TEST(UncarriedLine, KeepsTheProjectsOwnRowsAndNamesEveryDirectory) {
  config::ProjectFile project;
  project.carry = {"vendor", "we\"ird"};
  const std::string line = uncarried_line({"node_modules", ".venv"}, project);
  EXPECT_EQ(line.rfind("node_modules and .venv are in the project and ignored by git, so this git workspace "
                       "lacks them and a program that needs them fails",
                       0),
            0U)
      << line;
  EXPECT_NE(line.find("make chock.zon's .carry row .carry = .{ \"vendor\", \"we\\\"ird\", \"node_modules\", "
                      "\".venv\" } (or run with --carry node_modules --carry .venv)"),
            std::string::npos)
      << line;
}

}  // namespace
}  // namespace chock::session
