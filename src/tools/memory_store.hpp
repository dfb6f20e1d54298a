// The knowledgebase (agent memory) of a project, as files: one file per
// note name, its versions newest first, each a small header and the body.
// These functions run inside the memory tools' own sandboxed call (the only
// call the knowledgebase is mounted in, at /run/chock/memory), on the
// directory given; the host side only checks the request and reads answers.
//
// A version on disk:
//   chock-note 1\n
//   name: NAME\nkind: KIND\nversion: N\ntime: 2026-12-04T19:00:00Z\n
//   session: ID\nbytes: B\ndescription: TEXT\n
//   \n
//   <B bytes of body>\n
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"

namespace chock::tools {

inline constexpr std::size_t kMaxNoteNames = 128;
inline constexpr std::size_t kMaxNoteBytes = 16 << 10;
inline constexpr std::size_t kMaxNoteVersions = 16;
inline constexpr std::size_t kMaxNameBytes = 64;
inline constexpr std::size_t kMaxDescriptionBytes = 200;
inline constexpr const char* kNoteKinds[] = {"insight", "code_fact", "convention",
                                             "gotcha",  "dead_end",  "environment"};

struct Note {
  std::string name;
  std::string kind;
  int version = 0;  // 1 is the first
  std::string time;
  std::string session;
  std::string description;
  std::string body;
};

// The checks of a request, made by the host side before the call and again
// inside it; each Error names the limit.
Expected<void> check_name(std::string_view name);
Expected<void> check_kind(std::string_view kind);
Expected<void> check_description(std::string_view text);

// Every note's newest version, bodies left out, by name.
Expected<std::vector<Note>> list_notes(const std::string& dir);
// A note's newest version, or version N.
Expected<Note> read_note(const std::string& dir, const std::string& name, std::optional<int> version);
// Adds a version (name, kind, time, session, description, body of `note`);
// the version number it got. Past a limit it is refused, and nothing is
// dropped to make room.
Expected<int> write_note(const std::string& dir, const Note& note);

// The memory tools' own call: `tool` (the chock binary) read-only at
// /run/chock/bin/chock running `memory-tool ARGS...`, the knowledgebase `dir`
// read-write at /run/chock/memory, no network, and nothing else of Chock's.
// The one call the knowledgebase is mounted in.
inline constexpr const char* kMemoryInside = "/run/chock/memory";
inline constexpr const char* kMemoryToolInside = "/run/chock/bin/chock";
Config memory_call(const std::string& tool, const std::string& dir, const std::vector<std::string>& args);

}  // namespace chock::tools
