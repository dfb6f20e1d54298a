// `chock doctor`: each layer of the sandbox tried for real on this machine,
// one row a layer. Nothing is inferred from a kernel version: a layer that
// cannot be undone (a user namespace, a seccomp filter) is tried in a forked
// child (probe_child.hpp), the rest where chock run itself would do them.
#pragma once

#include <string>
#include <vector>

#include "chock/error.hpp"

namespace chock::doctor {

// How a row stands, as a script reads it.
enum class Level { ok, degraded, off };
[[nodiscard]] const char* level_name(Level level);  // "ok", "degraded", "off"

struct Row {
  std::string name;   // "user namespace"
  std::string state;  // the word shown: level_name(level), or for write^execute "strict" / "OFF"
  Level level = Level::ok;
  bool blocks = false;  // chock run cannot do without this layer: off here means a first run cannot work
  std::string reason;   // in words, with the step and errno name when something was refused
};

// A row whose word is its level's name.
[[nodiscard]] Row make_row(std::string name, Level level, bool blocks, std::string reason);

struct Options {
  std::string project_dir;                // empty: the current directory
  std::string org_bundle;                 // --org-bundle; empty: /etc/chock/bundle.zon if present
  std::vector<std::string> policy_rules;  // --policy-rule ACTION=DECISION
};

// Every row, in a fixed order. An Error only when the project's files cannot
// be read (a malformed chock.zon or bundle): then a first run cannot work.
[[nodiscard]] Expected<std::vector<Row>> check(const Options& options);

// 2 when a blocking row is off, else 0 (degraded rows included).
inline constexpr int kExitBlocked = 2;
[[nodiscard]] int exit_status(const std::vector<Row>& rows);

// The rows as a person reads them: aligned columns (marker, name, state,
// reason), a legend for the marker and one line of verdict.
[[nodiscard]] std::string format_table(const std::vector<Row>& rows);
// The rows as a JSON array of {name, state, level, blocks, reason}.
[[nodiscard]] std::string format_json(const std::vector<Row>& rows);

}  // namespace chock::doctor
