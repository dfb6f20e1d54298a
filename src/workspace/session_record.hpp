// A session's record, session.json: written from a Session, read back into
// one without trusting a byte (a call cannot write it, but a person, a full
// disk or a killed chock can leave it damaged).
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"

namespace chock::workspace {

nlohmann::json session_record(const Session& s);

// The session `id` kept in `dir`, from the bytes of its session.json; an
// Error that says what is wrong ("is damaged (...)", "names another session").
Expected<Session> parse_session_record(std::string_view text, const std::string& id, const std::string& dir);

// Whether `name` names a shared base: "<uid>-<commit>", the uid in decimal
// (at most 10 digits), the commit 40 or 64 lowercase hex digits.
bool is_base_key(std::string_view name);
// Whether `name` names a git shared index: "sharedindex.<hash>", the hash
// as in is_base_key.
bool is_shared_index_name(std::string_view name);

}  // namespace chock::workspace
