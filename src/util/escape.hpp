// Text that came from a tool call (file names, commit subjects, branch
// names, paths) shown to a person or written to a list: every byte that a
// terminal would act on instead of printing is made visible.
#pragma once

#include <string>
#include <string_view>

namespace chock {

// For a terminal: C0 controls and DEL as \n, \t, \r or \xNN; the C1
// controls (U+0080-U+009F), the bidirectional overrides and isolates
// (U+202A-U+202E, U+2066-U+2069) and the line and paragraph separators
// (U+2028, U+2029) as \uNNNN; a byte that is not UTF-8 as \xNN. A backslash
// is left as it is, so escaping twice changes nothing.
[[nodiscard]] std::string printable(std::string_view text);

// The same, with a backslash written as \\ as well: unambiguous, so a
// reader can turn it back into the exact bytes (the adopt list uses it).
[[nodiscard]] std::string unambiguous(std::string_view text);

}  // namespace chock
