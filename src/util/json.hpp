// JSON read from anything Chock does not write itself in this process (a
// client's line, a wrapped server's, a session's files, the credential
// store): nesting is refused before a value is built, because nlohmann's
// copy, comparison and dump recurse once a level, and 150,000 levels (300
// KB) overflow the stack.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// Deeper than any message or file of Chock's needs (MCP's deepest is under 10).
inline constexpr std::size_t kMaxJsonDepth = 64;

// The value of `text`, or an Error whose `what` completes "the line is ...":
// "not JSON", or "JSON nested deeper than 64 levels" (Errc::hostile_content).
[[nodiscard]] Expected<nlohmann::json> parse_json(std::string_view text,
                                                  std::size_t max_depth = kMaxJsonDepth);

}  // namespace chock
