// The fixed program of the MCP file tools (read_file, write_file, edit_file,
// list_directory, glob, grep). It runs inside the tool call's own sandbox, as
// `chock file-tool`, never on the host: every path is resolved there, below
// the project ($CHOCK_PROJECT) with openat2(RESOLVE_BENEATH), so neither `..`
// nor a link the workspace holds leads out, and every layer of the sandbox
// holds around it. One JSON request on stdin, one JSON answer on stdout.
#pragma once

#include <cstddef>
#include <string>

#include "mcp/jsonrpc.hpp"

namespace chock::mcp {

inline constexpr std::size_t kMaxFileToolBytes = 8U << 20;  // a file read, edited or searched
inline constexpr std::size_t kMaxReadAnswerBytes = 256U << 10;
inline constexpr std::size_t kMaxListed = 2000;    // entries, paths or matches in one answer
inline constexpr std::size_t kMaxWalked = 200000;  // entries looked at by glob or grep

// {"op": "read"|"write"|"edit"|"list"|"glob"|"grep", ...} -> {"error": why} or the answer.
[[nodiscard]] Json file_tool(const Json& request, const std::string& project);
// The whole program: stdin to stdout; 0, or 1 when the answer is an error.
int file_tool_main();

}  // namespace chock::mcp
