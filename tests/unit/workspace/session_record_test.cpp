// session.json as Chock reads it back: a number that is not a whole number
// in its field's range is a damaged record, said so, never converted (found
// by session_fuzz: 2e79 into last_run, undefined behaviour in nlohmann's get).
#include <gtest/gtest.h>

#include <string>

#include "workspace/session_record.hpp"

namespace chock::workspace {
namespace {

std::string record_with(const std::string& field, const std::string& value) {
  std::string text =
      R"({"adopted_run":-1,"always":[],"applied":"","base":"5a0e","carry":[],"common_dir":"/p/.git",)"
      R"("created":1,"deny":[],"id":"s1","kind":"git","last_run":1,"lower":"","owner":1000,"project":"/p"})";
  const std::string key = "\"" + field + "\":";
  const auto at = text.find(key) + key.size();
  const auto end = text.find_first_of(",}", at);
  return text.replace(at, end - at, value);
}

TEST(SessionRecord, ANumberOutOfItsRangeIsADamagedRecordNotAConversion) {
  ASSERT_TRUE(parse_session_record(record_with("last_run", "1796543693"), "s1", "/d/s1"));
  for (const auto& [field, value] :
       {std::pair<std::string, std::string>{"last_run", "19999999999999999999999999999999"},
        {"last_run", "2.5"},
        {"created", "1e300"},
        {"adopted_run", "\"1\""},
        {"owner", "-1"},
        {"owner", "4294967296"},
        {"lower_shift", R"({"uid_from":1e30,"gid_from":0,"uid_to":0,"gid_to":0})"}}) {
    std::string text =
        record_with(field == "lower_shift" ? "lower" : field, field == "lower_shift" ? "\"\"" : value);
    if (field == "lower_shift") text.insert(text.size() - 1, R"(,"lower_shift":)" + value);
    auto parsed = parse_session_record(text, "s1", "/d/s1");
    ASSERT_FALSE(parsed) << field << " = " << value;
    EXPECT_NE(parsed.error().message().find("is damaged"), std::string::npos) << parsed.error().message();
  }
}

}  // namespace
}  // namespace chock::workspace
