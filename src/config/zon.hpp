// A reader for the part of Zig Object Notation that Chock's files use, into a
// tree of values that each remember where they were written, so that every
// complaint about a file can name its line and column.
//
// Read: anonymous struct literals `.{ .name = value }`, tuples `.{ a, b }`
// (and `.{}`, which is both), strings with Zig escapes, multiline `\\` strings,
// integers (decimal, 0x, 0o, 0b, `_` between digits, a leading `-`), decimal
// floats, enum literals `.allow`, true, false, null, `//` comments and
// trailing commas. Not read: char literals, hex floats, `@"quoted"` names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"

namespace chock::zon {

// Larger inputs are refused: a configuration file has no reason to be big,
// and the cap bounds what a hostile file can make the reader do.
inline constexpr std::size_t kMaxInputBytes = std::size_t{64} * 1024;
// `.{` nested deeper than this is refused, which bounds the reader's recursion.
inline constexpr int kMaxDepth = 64;

// 1-based; the column counts bytes, not characters.
struct Position {
  std::uint32_t line = 1;
  std::uint32_t column = 1;
};

struct Field;

struct Value {
  enum class Kind { null, boolean, integer, floating, string, enum_literal, struct_literal, tuple };
  Kind kind = Kind::null;
  Position at;  // the first byte of the value (the `-` of a negative number, the `.` of `.{`)

  bool boolean = false;
  bool negative = false;        // integer: below zero
  std::uint64_t magnitude = 0;  // integer: the absolute value (at most 2^63 when negative)
  double floating = 0;
  std::string text;           // string: the decoded bytes; enum_literal: the name without the dot
  std::vector<Value> items;   // tuple
  std::vector<Field> fields;  // struct_literal, in the order written; names are unique

  // `.{}` is both an empty struct and an empty tuple; it is read as a tuple.
  [[nodiscard]] bool is_struct() const { return kind == Kind::struct_literal || is_empty_tuple(); }
  [[nodiscard]] bool is_tuple() const { return kind == Kind::tuple; }
  [[nodiscard]] bool is_empty_tuple() const { return kind == Kind::tuple && items.empty(); }
  // The field called `name`, or nullptr.
  [[nodiscard]] const Field* find(std::string_view name) const;
};

struct Field {
  std::string name;
  Position at;  // the `.` before the name
  Value value;
};

// "an integer", "a string", ...: for "expected a string, found an integer".
[[nodiscard]] const char* kind_name(Value::Kind kind);

// "path:line:col: error: what", as an Error whose message() prints exactly that.
[[nodiscard]] Error error_at(std::string_view path, Position at, std::string_view what);
// "path:line:col", the way a rule records where it was written.
[[nodiscard]] std::string origin(std::string_view path, Position at);

// One value, alone in `text` but for whitespace and comments. `path` only
// names the input in errors. Never throws and never crashes on any bytes.
[[nodiscard]] Expected<Value> parse(std::string_view text, std::string_view path);

}  // namespace chock::zon
