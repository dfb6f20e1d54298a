// chock doctor's pure half: which rows make a first run impossible, and the
// table and JSON a person and a script read.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "doctor/doctor.hpp"

namespace chock::doctor {
namespace {

std::vector<Row> machine() {
  return {
      make_row("user namespace", Level::ok, true, "works"),
      make_row("cgroup v2", Level::degraded, false, "held by cgroup v1"),
      Row{"write^execute", "OFF", Level::degraded, false, "sandbox.jit answers allow"},
  };
}

TEST(DoctorExitStatus, DegradedRowsStillLetAFirstRunWork) {
  std::vector<Row> rows = machine();
  EXPECT_EQ(exit_status(rows), 0);
  // A blocking row that is only degraded (Landlock on an older ABI) does not block.
  rows.push_back(make_row("landlock", Level::degraded, true, "ABI 3"));
  EXPECT_EQ(exit_status(rows), 0);
  // Nor does a row that is off but not needed here.
  rows.push_back(make_row("rootless overlayfs", Level::off, false, "EPERM"));
  EXPECT_EQ(exit_status(rows), 0);
}

TEST(DoctorExitStatus, ABlockingRowThatIsOffExits2) {
  std::vector<Row> rows = machine();
  rows.push_back(make_row("seccomp", Level::off, true, "seccomp(SECCOMP_SET_MODE_FILTER): ENOSYS"));
  EXPECT_EQ(exit_status(rows), kExitBlocked);
  EXPECT_EQ(kExitBlocked, 2);
}

TEST(DoctorRow, TheWordIsTheLevelUnlessTheRowNamesItsOwn) {
  EXPECT_EQ(make_row("pidfd", Level::ok, true, "").state, "ok");
  EXPECT_EQ(make_row("pidfd", Level::degraded, true, "").state, "degraded");
  EXPECT_EQ(make_row("pidfd", Level::off, true, "").state, "off");
  EXPECT_STREQ(level_name(Level::degraded), "degraded");
}

TEST(DoctorTable, ColumnsAlignAndBlockingRowsAreMarked) {
  const std::string expected =
      "* user namespace  ok        works\n"
      "  cgroup v2       degraded  held by cgroup v1\n"
      "  write^execute   OFF       sandbox.jit answers allow\n"
      "\n"
      "* chock run cannot do without this layer: when it is off, nothing runs\n"
      "a first run can work here; not at full strength: cgroup v2, write^execute\n";
  EXPECT_EQ(format_table(machine()), expected);
}

TEST(DoctorTable, TheVerdictNamesTheRowsThatAreOff) {
  std::vector<Row> rows = machine();
  rows.push_back(make_row("landlock", Level::off, true, "ENOSYS"));
  rows.push_back(make_row("capped tmpfs", Level::off, true, "EPERM"));
  const std::string table = format_table(rows);
  EXPECT_NE(table.find("\na first run cannot work here: landlock, capped tmpfs are off\n"), std::string::npos)
      << table;
  EXPECT_NE(table.find("* landlock        off       ENOSYS\n"), std::string::npos) << table;
}

TEST(DoctorTable, EveryLayerOnSaysSo) {
  const std::string table = format_table({make_row("pidfd", Level::ok, true, "works")});
  EXPECT_EQ(table,
            "* pidfd  ok  works\n\n* chock run cannot do without this layer: when it is off, nothing runs\n"
            "a first run can work here; every layer is on\n");
}

TEST(DoctorJson, EachObjectCarriesTheRowsWords) {
  const nlohmann::json array = nlohmann::json::parse(format_json(machine()));
  ASSERT_TRUE(array.is_array());
  ASSERT_EQ(array.size(), 3U);
  EXPECT_EQ(array[0], (nlohmann::json{{"name", "user namespace"},
                                      {"state", "ok"},
                                      {"level", "ok"},
                                      {"blocks", true},
                                      {"reason", "works"}}));
  EXPECT_EQ(array[2]["state"], "OFF");
  EXPECT_EQ(array[2]["level"], "degraded");
  EXPECT_EQ(array[2]["blocks"], false);
}

}  // namespace
}  // namespace chock::doctor
