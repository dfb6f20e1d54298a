#include "config/zon.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <unordered_map>

namespace chock::zon {

const Field* Value::find(std::string_view name) const {
  for (const Field& f : fields)
    if (f.name == name) return &f;
  return nullptr;
}

const char* kind_name(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::null:
      return "null";
    case Value::Kind::boolean:
      return "a boolean";
    case Value::Kind::integer:
      return "an integer";
    case Value::Kind::floating:
      return "a float";
    case Value::Kind::string:
      return "a string";
    case Value::Kind::enum_literal:
      return "an enum literal";
    case Value::Kind::struct_literal:
      return "a struct";
    case Value::Kind::tuple:
      return "a tuple";
  }
  return "a value";
}

std::string origin(std::string_view path, Position at) {
  return std::string(path) + ":" + std::to_string(at.line) + ":" + std::to_string(at.column);
}

Error error_at(std::string_view path, Position at, std::string_view what) {
  return Error{origin(path, at) + ": error: " + std::string(what), {}, 0, Errc::bad_config};
}

namespace {

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || is_digit(c);
}

// 0..35 for [0-9a-zA-Z], and a value no base reaches for anything else.
int digit_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'z') return c - 'a' + 10;
  if (c >= 'A' && c <= 'Z') return c - 'A' + 10;
  return 99;
}

std::string hex_byte(unsigned char c) {
  const char* digits = "0123456789abcdef";
  return std::string("byte 0x") + digits[c >> 4] + digits[c & 0xf];
}

// The length of the well-formed UTF-8 sequence at text[i] (which is >= 0x80),
// or 0. Overlong forms, surrogates and code points past U+10FFFF are refused.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  std::size_t len = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
  if (lead >= 0xc2 && lead <= 0xdf) {
    len = 2;
  } else if (lead >= 0xe0 && lead <= 0xef) {
    len = 3;
    if (lead == 0xe0) lo = 0xa0;
    if (lead == 0xed) hi = 0x9f;
  } else if (lead >= 0xf0 && lead <= 0xf4) {
    len = 4;
    if (lead == 0xf0) lo = 0x90;
    if (lead == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < len; ++k)
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  return len;
}

void append_utf8(std::string& out, std::uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xc0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xe0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  } else {
    out += static_cast<char>(0xf0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
    out += static_cast<char>(0x80 | (cp & 0x3f));
  }
}

Value node(Value::Kind kind, Position at) {
  Value v;
  v.kind = kind;
  v.at = at;
  return v;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view path) : text_(text), path_(path) {
    line_starts_.push_back(0);
    // Positions past the cap are never reported, so lines past it are not counted.
    const std::size_t counted = std::min(text_.size(), kMaxInputBytes + 1);
    for (std::size_t i = 0; i < counted; ++i)
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }

  Expected<Value> document() {
    if (text_.size() > kMaxInputBytes)
      return fail(kMaxInputBytes, "the file is longer than " + std::to_string(kMaxInputBytes) +
                                      " bytes (64 KiB), the most Chock reads");
    if (auto nul = text_.find('\0'); nul != std::string_view::npos) return fail(nul, "a NUL byte");
    if (auto skipped = skip_trivia(); !skipped) return skipped.error();
    auto value = parse_value(0);
    if (!value) return value;
    if (auto skipped = skip_trivia(); !skipped) return skipped.error();
    if (pos_ < text_.size())
      return fail(pos_, "expected the end of the file after the value, found " + found());
    return value;
  }

 private:
  std::string_view text_;
  std::string_view path_;
  std::vector<std::size_t> line_starts_;
  std::size_t pos_ = 0;

  Position position_of(std::size_t offset) const {
    auto next = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    auto line = static_cast<std::size_t>(next - line_starts_.begin());
    return Position{static_cast<std::uint32_t>(line), static_cast<std::uint32_t>(offset - *(next - 1) + 1)};
  }
  Error fail(std::size_t offset, std::string_view what) const {
    return error_at(path_, position_of(offset), what);
  }
  bool at_end(std::size_t i) const { return i >= text_.size(); }
  char at(std::size_t i) const { return at_end(i) ? '\0' : text_[i]; }

  // What sits at the cursor, for "expected X, found Y".
  std::string found() const {
    if (at_end(pos_)) return "the end of the file";
    const char c = text_[pos_];
    if (c == '"') return "a string";
    if (is_digit(c) || c == '-') return "a number";
    if (c == '.' && is_name_start(at(pos_ + 1))) return "'." + std::string(name_at(pos_ + 1)) + "'";
    if (is_name_start(c)) return "'" + std::string(name_at(pos_)) + "'";
    if (c > 0x20 && c < 0x7f) return std::string("'") + c + "'";
    return hex_byte(static_cast<unsigned char>(c));
  }
  std::string_view name_at(std::size_t i) const {
    std::size_t end = i;
    while (!at_end(end) && is_name_char(text_[end])) ++end;
    return text_.substr(i, end - i);
  }

  // Whitespace and `//` comments (whose bytes must still be UTF-8).
  Expected<void> skip_trivia() {
    while (!at_end(pos_)) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && at(pos_ + 1) == '/') {
        while (!at_end(pos_) && text_[pos_] != '\n') {
          if (static_cast<unsigned char>(text_[pos_]) < 0x80) {
            ++pos_;
            continue;
          }
          const std::size_t len = utf8_length(text_, pos_);
          if (len == 0) return fail(pos_, "invalid UTF-8 in a comment");
          pos_ += len;
        }
      } else {
        break;
      }
    }
    return {};
  }

  Expected<Value> parse_value(int depth) {
    const std::size_t start = pos_;
    if (at_end(pos_)) return fail(pos_, "expected a value, found the end of the file");
    const char c = text_[pos_];
    if (c == '.' && at(pos_ + 1) == '{') return parse_container(depth);
    if (c == '.' && is_name_start(at(pos_ + 1))) {
      Value v = node(Value::Kind::enum_literal, position_of(start));
      v.text = std::string(name_at(pos_ + 1));
      pos_ += 1 + v.text.size();
      return v;
    }
    if (c == '.') return fail(pos_, "expected a name or '{' after '.'");
    if (c == '"') return parse_string();
    if (c == '\\' && at(pos_ + 1) == '\\') return parse_multiline();
    if (c == '-' || is_digit(c)) return parse_number();
    if (is_name_start(c)) {
      const std::string_view word = name_at(pos_);
      Value v = node(Value::Kind::null, position_of(start));
      if (word == "true" || word == "false") {
        v.kind = Value::Kind::boolean;
        v.boolean = word == "true";
      } else if (word != "null") {
        return fail(pos_, "unknown word '" + std::string(word) +
                              "'; a value is a string, a number, .name, .{ ... }, true, false or null");
      }
      pos_ += word.size();
      return v;
    }
    return fail(pos_, "expected a value, found " + found());
  }

  // `.{` at the cursor: a struct when the first element is `.name =`, else a tuple.
  Expected<Value> parse_container(int depth) {
    const std::size_t open = pos_;
    if (depth + 1 > kMaxDepth)
      return fail(open, "nested too deeply (more than " + std::to_string(kMaxDepth) + " levels of .{ })");
    pos_ += 2;
    if (auto skipped = skip_trivia(); !skipped) return skipped.error();
    Value v = node(Value::Kind::tuple, position_of(open));
    if (looks_like_field()) v.kind = Value::Kind::struct_literal;
    std::unordered_map<std::string_view, Position> seen;
    while (true) {
      if (auto skipped = skip_trivia(); !skipped) return skipped.error();
      if (at(pos_) == '}') break;
      if (v.kind == Value::Kind::struct_literal) {
        auto field = parse_field(depth, seen);
        if (!field) return field.error();
        v.fields.push_back(std::move(*field));
      } else {
        auto item = parse_value(depth + 1);
        if (!item) return item;
        v.items.push_back(std::move(*item));
      }
      if (auto skipped = skip_trivia(); !skipped) return skipped.error();
      if (at(pos_) == ',') {
        ++pos_;
        continue;
      }
      if (at(pos_) == '}') break;
      std::string what = "expected ',' or '}', found " + found();
      if (at_end(pos_)) what += " (the .{ at " + origin_text(open) + " is not closed)";
      return fail(pos_, what);
    }
    ++pos_;  // the '}'
    return v;
  }
  std::string origin_text(std::size_t offset) const {
    const Position p = position_of(offset);
    return std::to_string(p.line) + ":" + std::to_string(p.column);
  }

  // `.name` followed by `=` (not `==`), without moving the cursor.
  bool looks_like_field() const {
    if (at(pos_) != '.' || !is_name_start(at(pos_ + 1))) return false;
    std::size_t i = pos_ + 1 + name_at(pos_ + 1).size();
    // Whitespace and comments, as skip_trivia takes them (a bad byte in a
    // comment is reported when the cursor gets there).
    while (!at_end(i)) {
      const char c = text_[i];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++i;
      } else if (c == '/' && at(i + 1) == '/') {
        while (!at_end(i) && text_[i] != '\n') ++i;
      } else {
        break;
      }
    }
    return at(i) == '=' && at(i + 1) != '=';
  }

  Expected<Field> parse_field(int depth, std::unordered_map<std::string_view, Position>& seen) {
    if (at(pos_) != '.' || !is_name_start(at(pos_ + 1)))
      return fail(pos_, "expected a field such as '.name = value', found " + found());
    Field f;
    f.at = position_of(pos_);
    const std::string_view name = name_at(pos_ + 1);
    f.name = std::string(name);
    if (auto [first, inserted] = seen.emplace(name, f.at); !inserted)
      return fail(pos_, "duplicate field '." + f.name + "' (first at " + std::to_string(first->second.line) +
                            ":" + std::to_string(first->second.column) + ")");
    pos_ += 1 + name.size();
    if (auto skipped = skip_trivia(); !skipped) return skipped.error();
    if (at(pos_) != '=' || at(pos_ + 1) == '=')
      return fail(pos_, "expected '=' after '." + f.name + "', found " + found());
    ++pos_;
    if (auto skipped = skip_trivia(); !skipped) return skipped.error();
    auto value = parse_value(depth + 1);
    if (!value) return value.error();
    f.value = std::move(*value);
    return f;
  }

  // One byte of string content at pos_ (not a quote, backslash or newline),
  // appended to `out`; refuses control characters and malformed UTF-8.
  Expected<void> take_content_byte(std::string& out, bool multiline) {
    const char* what = multiline ? "a multiline string" : "a string";
    const auto c = static_cast<unsigned char>(text_[pos_]);
    const std::string escape = "\\x" + hex_byte(c).substr(7);
    if ((c < 0x20 && c != '\t') || c == 0x7f)
      return fail(pos_, "control character (" + hex_byte(c) + ") in " + what +
                            (multiline ? ", which has no escapes; write it in a \"...\" string as " + escape
                                       : "; write it as an escape such as " + escape));
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++pos_;
      return {};
    }
    const std::size_t len = utf8_length(text_, pos_);
    if (len == 0) return fail(pos_, std::string("invalid UTF-8 in ") + what);
    out.append(text_.substr(pos_, len));
    pos_ += len;
    return {};
  }

  Expected<Value> parse_string() {
    const std::size_t open = pos_;
    Value v = node(Value::Kind::string, position_of(open));
    ++pos_;
    while (true) {
      if (at_end(pos_) || text_[pos_] == '\n') return fail(open, "unterminated string");
      const char c = text_[pos_];
      if (c == '"') break;
      if (c == '\\') {
        if (auto escaped = take_escape(v.text); !escaped) return escaped.error();
        continue;
      }
      if (auto taken = take_content_byte(v.text, false); !taken) return taken.error();
    }
    ++pos_;  // the closing quote
    return v;
  }

  // A backslash at pos_: \n \r \t \\ \' \" \xNN \u{N..NNNNNN}.
  Expected<void> take_escape(std::string& out) {
    const std::size_t backslash = pos_;
    if (at_end(pos_ + 1) || text_[pos_ + 1] == '\n')
      return fail(backslash, "bad escape: '\\' at the end of a line");
    const char e = text_[pos_ + 1];
    const char* simple = nullptr;
    switch (e) {
      case 'n':
        simple = "\n";
        break;
      case 'r':
        simple = "\r";
        break;
      case 't':
        simple = "\t";
        break;
      case '\\':
        simple = "\\";
        break;
      case '\'':
        simple = "'";
        break;
      case '"':
        simple = "\"";
        break;
      default:
        break;
    }
    if (simple != nullptr) {
      out += simple;
      pos_ += 2;
      return {};
    }
    if (e == 'x') {
      const int hi = digit_value(at(pos_ + 2)), lo = digit_value(at(pos_ + 3));
      if (hi >= 16 || lo >= 16)
        return fail(backslash, "bad escape '\\x': it takes exactly two hex digits, as in \\x41");
      out += static_cast<char>(hi * 16 + lo);
      pos_ += 4;
      return {};
    }
    if (e == 'u') {
      const char* form = "bad escape '\\u': it is written \\u{1F600}, one to six hex digits";
      if (at(pos_ + 2) != '{') return fail(backslash, form);
      std::size_t i = pos_ + 3;
      std::uint32_t cp = 0;
      std::size_t digits = 0;
      while (!at_end(i) && digit_value(text_[i]) < 16 && digits < 7) {
        cp = cp * 16 + static_cast<std::uint32_t>(digit_value(text_[i]));
        ++i;
        ++digits;
      }
      if (digits == 0 || digits > 6 || at(i) != '}') return fail(backslash, form);
      if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return fail(backslash, "bad escape: \\u{" + std::string(text_.substr(pos_ + 3, digits)) +
                                   "} is not a Unicode scalar value");
      append_utf8(out, cp);
      pos_ = i + 1;
      return {};
    }
    const auto u = static_cast<unsigned char>(e);
    const std::string shown =
        u > 0x20 && u < 0x7f ? std::string("'\\") + e + "'" : "'\\' before " + hex_byte(u);
    return fail(backslash,
                "bad escape " + shown + "; the escapes are \\n \\r \\t \\\\ \\' \\\" \\xNN \\u{NNNNNN}");
  }

  // Lines that each start with `\\`, joined with "\n"; nothing is escaped.
  Expected<Value> parse_multiline() {
    Value v = node(Value::Kind::string, position_of(pos_));
    while (true) {
      pos_ += 2;  // the `\\`
      while (!at_end(pos_) && text_[pos_] != '\n') {
        // A CR is part of the line ending, not of the string.
        if (text_[pos_] == '\r' && at(pos_ + 1) == '\n') {
          ++pos_;
          break;
        }
        if (auto taken = take_content_byte(v.text, true); !taken) return taken.error();
      }
      const std::size_t line_end = pos_;
      if (auto skipped = skip_trivia(); !skipped) return skipped.error();
      if (at(pos_) == '\\' && at(pos_ + 1) == '\\') {
        v.text += '\n';
        continue;
      }
      pos_ = line_end;
      return v;
    }
  }

  Expected<Value> parse_number() {
    const std::size_t start = pos_;
    Value v = node(Value::Kind::integer, position_of(start));
    if (text_[pos_] == '-') {
      v.negative = true;
      ++pos_;
      if (!is_digit(at(pos_))) return fail(start, "expected a digit after '-'");
    }
    int base = 10;
    if (text_[pos_] == '0' && (at(pos_ + 1) == 'x' || at(pos_ + 1) == 'o' || at(pos_ + 1) == 'b')) {
      base = at(pos_ + 1) == 'x' ? 16 : at(pos_ + 1) == 'o' ? 8 : 2;
      pos_ += 2;
    }
    std::string digits;  // without the prefix and the underscores
    const std::size_t first_digit = pos_;
    if (auto read = take_digits(base, digits); !read) return read.error();
    const std::size_t whole_digits = digits.size();
    bool is_float = false;
    if (base == 10 && at(pos_) == '.' && is_digit(at(pos_ + 1))) {
      is_float = true;
      digits += '.';
      ++pos_;
      if (auto read = take_digits(10, digits); !read) return read.error();
    }
    if (base == 10 && (at(pos_) == 'e' || at(pos_) == 'E')) {
      is_float = true;
      digits += 'e';
      ++pos_;
      if (at(pos_) == '+' || at(pos_) == '-') digits += text_[pos_++];
      if (auto read = take_digits(10, digits); !read) return read.error();
    }
    if (base == 16 && at(pos_) == '.' && digit_value(at(pos_ + 1)) < 16)
      return fail(start, "hex floats are not read here; write the number in decimal");
    if (is_name_char(at(pos_)))
      return fail(pos_, std::string("invalid character '") + text_[pos_] + "' in a base-" +
                            std::to_string(base) + " number");
    if (base == 10 && whole_digits > 1 && digits[0] == '0')
      return fail(first_digit, "a number cannot start with 0 (for octal, write 0o" +
                                   digits.substr(1, whole_digits - 1) + ")");
    if (is_float) {
      v.kind = Value::Kind::floating;
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v.floating);
      if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(v.floating))
        return fail(start, "float out of range");
      if (v.negative) v.floating = -v.floating;
      v.negative = false;
      return v;
    }
    for (char d : digits) {
      const auto dv = static_cast<std::uint64_t>(digit_value(d));
      const auto b = static_cast<std::uint64_t>(base);
      if (v.magnitude > (std::numeric_limits<std::uint64_t>::max() - dv) / b)
        return fail(start, "integer too large");
      v.magnitude = v.magnitude * b + dv;
    }
    if (v.negative && v.magnitude > (std::uint64_t{1} << 63)) return fail(start, "integer too large");
    if (v.magnitude == 0) v.negative = false;
    return v;
  }

  // digit ('_'? digit)*, in `base`, appended to `out`.
  Expected<void> take_digits(int base, std::string& out) {
    if (digit_value(at(pos_)) >= base) {
      if (at(pos_) == '_') return fail(pos_, "'_' must sit between digits");
      return fail(pos_, "expected a base-" + std::to_string(base) + " digit, found " + found());
    }
    while (!at_end(pos_)) {
      const char c = text_[pos_];
      if (c == '_') {
        if (digit_value(at(pos_ + 1)) >= base) return fail(pos_, "'_' must sit between digits");
        ++pos_;
        continue;
      }
      if (digit_value(c) >= base) break;
      out += c;
      ++pos_;
    }
    return {};
  }
};

}  // namespace

Expected<Value> parse(std::string_view text, std::string_view path) {
  return Parser(text, path).document();
}

}  // namespace chock::zon
