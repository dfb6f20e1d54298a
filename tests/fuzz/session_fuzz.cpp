// libFuzzer: arbitrary bytes as what Chock reads back from its own files,
// which a killed chock, a full disk or a person may have left damaged:
// the first byte chooses a session's record (session.json) or a session
// log with its head file (split at the first NUL). A crash or sanitizer
// report is a bug; so is a record read back as another session's, a log
// that verifies while a line of it is not JSON or has no newline, and a
// verification that is not the same twice.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "log/session_log.hpp"
#include "workspace/session_record.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto s = chock::workspace::parse_session_record(bytes, "s1", "/data/workspaces/s1");
    if (s && (s->id != "s1" || s->dir != "/data/workspaces/s1" || !s->project.starts_with('/'))) std::abort();
    if (s) {
      // What is written back reads back the same.
      auto again = chock::workspace::parse_session_record(chock::workspace::session_record(*s).dump(2), "s1",
                                                          "/data/workspaces/s1");
      if (!again || again->project != s->project || again->base != s->base || again->deny != s->deny)
        std::abort();
    }
    return 0;
  }
  const std::size_t nul = bytes.find('\0');
  const std::string_view content = bytes.substr(0, nul);
  const std::optional<std::string> head =
      nul == std::string_view::npos ? std::nullopt : std::optional<std::string>(bytes.substr(nul + 1));
  const auto v = chock::log::verify_chain(content, head, "s1.head");
  const auto w = chock::log::verify_chain(content, head, "s1.head");
  if (v.ok != w.ok || v.bad_line != w.bad_line || v.problem != w.problem) std::abort();
  if (v.ok && ((!content.empty() && content.back() != '\n') || !v.torn_lines.empty() || v.bad_line != 0))
    std::abort();
  if (v.ok) {
    for (std::size_t start = 0; start < content.size();) {
      const std::size_t end = content.find('\n', start);
      if (!nlohmann::json::accept(content.substr(start, end - start))) std::abort();
      start = end + 1;
    }
  }
  return 0;
}
