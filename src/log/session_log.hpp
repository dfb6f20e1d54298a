// The session log: one JSON object a line, one file a session, chained by
// SHA-256 so that an edited, inserted or removed line shows.
//
//   $XDG_STATE_HOME/chock/sessions/<project key>/<session>.jsonl
//   {"ts":"2025-03-01T09:14:07.215Z","event":"tool.call","session":"k3f9x2ab",
//    "prev":"<SHA-256 hex of the previous line's bytes>", ...fields}
//
// The first line's prev is 64 zeros. Beside the log, <session>.head holds
// the line count and the SHA-256 of the last line, so that removing the last
// line (which no later line's prev would betray) shows too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::log {

// The events the sandbox writes, so callers do not spell them twice.
namespace event {
inline constexpr std::string_view kSessionStart = "session.start";
inline constexpr std::string_view kSessionConfig = "session.config";
inline constexpr std::string_view kWorkspaceOpen = "workspace.open";
inline constexpr std::string_view kSandboxOpen = "sandbox.open";
inline constexpr std::string_view kToolCall = "tool.call";
inline constexpr std::string_view kToolResult = "tool.result";
inline constexpr std::string_view kNetworkSummary = "network.summary";
inline constexpr std::string_view kDeviceExposed = "device.exposed";
inline constexpr std::string_view kWorkspaceIntegrate = "workspace.integrate";
inline constexpr std::string_view kSessionEnd = "session.end";
}  // namespace event

// $XDG_STATE_HOME/chock when XDG_STATE_HOME is an absolute path, else
// $HOME/.local/state/chock (HOME, else the password database's home).
[[nodiscard]] Expected<std::string> state_dir();

// The folder name of a project: the basename of `absolute_project_dir`
// (characters outside [A-Za-z0-9._-] made '_'), '-', and the first 12 hex
// digits of the SHA-256 of the whole path, so that two projects of the same
// name do not share a folder.
[[nodiscard]] std::string project_key(std::string_view absolute_project_dir);

class SessionLog {
 public:
  // Opens (creating, with directories 0700 and the file 0600) the log of
  // `session` of the project at `project` (made absolute and resolved, so
  // one project has one folder whichever path names it).
  [[nodiscard]] static Expected<SessionLog> open(const std::string& project, const std::string& session);

  // Appends one line: ts, event, session, prev, then `fields` (an object or
  // null; a field may not reuse those four names). Holds an flock on the log
  // while it reads the last line, writes, and rewrites the head file, so
  // several chock processes can append to one session. Refuses, writing
  // nothing, when the log does not agree with its head file: continuing the
  // chain would hide the removal of a last line.
  [[nodiscard]] Expected<void> append(std::string_view event, const nlohmann::json& fields);

  // A line to append later, its time taken now.
  struct Entry {
    std::string event;
    nlohmann::json fields;
    std::string ts;
  };
  [[nodiscard]] static Entry entry(std::string_view event, const nlohmann::json& fields);
  [[nodiscard]] Expected<void> append(const Entry& entry);
  // Several, in order, under one lock (each line still followed by its head file).
  [[nodiscard]] Expected<void> append(std::span<const Entry> entries);

  // Reserves `bytes` of disk past the log's end (its size unchanged), so the
  // lines after a call that filled the disk still have room.
  [[nodiscard]] Expected<void> reserve(std::uint64_t bytes);

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& session() const { return session_; }

 private:
  // Writes the line chained from `prev` after `lines` lines (and after a cut
  // line when `torn_line`), then the head file (`head_bytes` long now, 0 none;
  // through `head_fd`, opened here if need be, when it is rewritten in place);
  // the log is `size` bytes before it. Called with the log locked.
  [[nodiscard]] Expected<void> append_line(const Entry& entry, const std::string& prev, std::size_t lines,
                                           std::size_t torn_line, std::size_t head_bytes, std::uint64_t size,
                                           UniqueFd& head_fd);
  SessionLog(UniqueFd dir, UniqueFd file, std::string path, std::string session)
      : dir_(std::move(dir)), file_(std::move(file)), path_(std::move(path)), session_(std::move(session)) {}

  UniqueFd dir_;   // the project folder: the head file is replaced relative to it
  UniqueFd file_;  // <session>.jsonl, O_RDWR | O_APPEND
  std::string path_;
  std::string session_;
  // Where this object's last append left the log: while the file is still
  // that size under the lock, no other writer came between, so the next
  // append chains from here without reading the log's end and head again.
  std::uint64_t known_size_ = UINT64_MAX;
  std::string known_prev_;
  std::size_t known_lines_ = 0;
  std::size_t known_head_bytes_ = 0;
};

struct Verification {
  bool ok = false;
  std::size_t lines = 0;  // lines in the log
  // 1-based: the first line that is wrong, or missing (a removed last line
  // is lines + 1); 0 when ok, or when the head file is missing or garbled.
  std::size_t bad_line = 0;
  std::string problem;  // in words, e.g. "line 4: prev does not match the SHA-256 of line 3 (...)"
  // Lines that a cut write left, each closed by the append after it, which
  // chains from its bytes (so editing one still shows). Never ok.
  std::vector<std::size_t> torn_lines;
  // The head file counts one line fewer than the log, whose last line chains
  // from it: a writer that stopped between its line and its head file (the
  // disk full, chock killed). The chain is whole; the next append catches up.
  bool head_behind = false;
};

// Walks the chain of the log at `log_path` and compares its end with the
// head file beside it. An Error only when the log cannot be read; a broken
// chain is a Verification with ok false.
[[nodiscard]] Expected<Verification> verify(const std::string& log_path);

// The walk itself, on bytes: a log's `content` and its head file's (nullopt
// when there is none, named `head_path` in the problem).
[[nodiscard]] Verification verify_chain(std::string_view content, const std::optional<std::string>& head_file,
                                        const std::string& head_path);

// The path of `session`'s log, whichever project folder it is in; an Error
// naming the session when there is none (or two).
[[nodiscard]] Expected<std::string> find_log(const std::string& session);

// One session's log file as found on disk.
struct LogFile {
  std::string session;
  std::string path;       // .../sessions/<project key>/<session>.jsonl
  std::int64_t modified;  // unix seconds of its last line
  std::uint64_t bytes;    // the log and its head file
};

// Every session log under the state directory (none when it does not exist).
[[nodiscard]] Expected<std::vector<LogFile>> list_logs();

// Removes a log and its head file. Returns the bytes freed.
[[nodiscard]] Expected<std::uint64_t> remove_log(const LogFile& log);

}  // namespace chock::log
