// The rows as a person and as a script read them, and the exit status.
// Pure functions of the rows: the unit tests hold them to their words.
#include <nlohmann/json.hpp>

#include <algorithm>

#include "doctor/doctor.hpp"

namespace chock::doctor {

const char* level_name(Level level) {
  switch (level) {
    case Level::ok:
      return "ok";
    case Level::degraded:
      return "degraded";
    case Level::off:
      return "off";
  }
  return "off";
}

Row make_row(std::string name, Level level, bool blocks, std::string reason) {
  return Row{std::move(name), level_name(level), level, blocks, std::move(reason)};
}

int exit_status(const std::vector<Row>& rows) {
  const bool blocked =
      std::any_of(rows.begin(), rows.end(), [](const Row& r) { return r.blocks && r.level == Level::off; });
  return blocked ? kExitBlocked : 0;
}

namespace {

std::string padded(const std::string& text, std::size_t width) {
  return text.size() >= width ? text : text + std::string(width - text.size(), ' ');
}

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

std::string format_table(const std::vector<Row>& rows) {
  std::size_t name_width = 0;
  std::size_t state_width = 0;
  for (const Row& r : rows) {
    name_width = std::max(name_width, r.name.size());
    state_width = std::max(state_width, r.state.size());
  }
  std::string out;
  std::vector<std::string> blocked;
  std::vector<std::string> short_of_ok;
  bool any_blocking = false;
  for (const Row& r : rows) {
    out += r.blocks ? "* " : "  ";
    out += padded(r.name, name_width) + "  " + padded(r.state, state_width) + "  " + r.reason;
    // No trailing blanks when a row has no reason.
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    any_blocking = any_blocking || r.blocks;
    if (r.blocks && r.level == Level::off)
      blocked.push_back(r.name);
    else if (r.level != Level::ok)
      short_of_ok.push_back(r.name);
  }
  if (any_blocking) out += "\n* chock run cannot do without this layer: when it is off, nothing runs\n";
  if (!blocked.empty()) {
    out += "a first run cannot work here: " + joined(blocked) + (blocked.size() == 1 ? " is" : " are") +
           " off\n";
  } else if (!short_of_ok.empty()) {
    out += "a first run can work here; not at full strength: " + joined(short_of_ok) + "\n";
  } else {
    out += "a first run can work here; every layer is on\n";
  }
  return out;
}

std::string format_json(const std::vector<Row>& rows) {
  // Keys in the order of the table's columns, not sorted.
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Row& r : rows) {
    out.push_back({{"name", r.name},
                   {"state", r.state},
                   {"level", level_name(r.level)},
                   {"blocks", r.blocks},
                   {"reason", r.reason}});
  }
  return out.dump(2) + "\n";
}

}  // namespace chock::doctor
