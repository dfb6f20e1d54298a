// A page as readable text, for `chock fetch --text`: what an agent reads
// when it asked for a web page. HTML is parsed by a real HTML5 parser
// (gumbo), never by patterns; what is not shown to a person on the page
// (scripts, styles, comments, templates) is not in the text either.
#pragma once

#include <string>
#include <string_view>

namespace chock::fetch {

// The text of an HTML document: blocks on lines of their own, list items
// as "- ", runs of spaces folded (but not inside <pre>), the title first.
std::string html_to_text(std::string_view html);

// `text` with every control character removed but newline and tab (C0,
// DEL, C1), and the bidirectional overrides that can make text read
// differently from how it is stored; bytes that are not UTF-8 become U+FFFD.
std::string strip_controls(std::string_view text);

}  // namespace chock::fetch
