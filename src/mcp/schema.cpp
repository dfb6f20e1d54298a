#include "mcp/schema.hpp"

#include <cmath>
#include <cstddef>
#include <regex>
#include <set>

namespace chock::mcp::schema {

namespace {

// Longer strings are not matched against a pattern: libstdc++'s regex
// recurses once a character, and a client's string can be megabytes.
constexpr std::size_t kMaxPatternInput = 1024;

const std::set<std::string>& known_keywords() {
  static const std::set<std::string> k{"type",
                                       "properties",
                                       "required",
                                       "additionalProperties",
                                       "items",
                                       "minItems",
                                       "maxItems",
                                       "minLength",
                                       "maxLength",
                                       "pattern",
                                       "minimum",
                                       "maximum",
                                       "enum",
                                       "const",
                                       "anyOf",
                                       "exclusiveMinimum",
                                       "exclusiveMaximum",
                                       "title",
                                       "description",
                                       "default",
                                       "examples",
                                       "$schema"};
  return k;
}

std::string joined_path(const std::string& where, const std::string& key) {
  return where.empty() ? key : where + "." + key;
}

// A value as a message quotes it: one line, ASCII, at most ~40 bytes.
std::string shown(const Json& v) {
  std::string s = v.dump(-1, ' ', true, Json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// A client's property name in a path: escaped, without its quotes, shortened.
std::string key_shown(const std::string& key) {
  std::string s = Json(key).dump(-1, ' ', true, Json::error_handler_t::replace);
  s = s.substr(1, s.size() - 2);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

std::string type_words(const std::string& t) {
  if (t == "object" || t == "array" || t == "integer") return "an " + t;
  if (t == "null") return "null";
  return "a " + t;
}

bool is_integer(const Json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

bool has_type(const Json& v, const std::string& t) {
  if (t == "object") return v.is_object();
  if (t == "array") return v.is_array();
  if (t == "string") return v.is_string();
  if (t == "number") return v.is_number();
  if (t == "integer") return is_integer(v);
  if (t == "boolean") return v.is_boolean();
  if (t == "null") return v.is_null();
  return false;
}

std::size_t code_points(const std::string& s) {
  std::size_t n = 0;
  for (const unsigned char c : s) n += (c & 0xC0U) != 0x80U ? 1 : 0;
  return n;
}

std::string where_or_root(const std::string& where) {
  return where.empty() ? "the value" : where;
}

std::optional<std::string> check_at(const Json& schema, const Json& v, const std::string& where);

std::optional<std::string> check_type(const Json& schema, const Json& v, const std::string& where) {
  const auto t = schema.find("type");
  if (t == schema.end()) return std::nullopt;
  std::vector<std::string> types;
  if (t->is_string()) types.push_back(*t);
  if (t->is_array())
    for (const auto& x : *t)
      if (x.is_string()) types.push_back(x);
  std::string wanted;
  for (const auto& x : types) {
    if (has_type(v, x)) return std::nullopt;
    wanted += (wanted.empty() ? "" : " or ") + type_words(x);
  }
  return where_or_root(where) + ": " + wanted + ", not " + shown(v);
}

std::optional<std::string> check_number(const Json& schema, const Json& v, const std::string& where) {
  if (!v.is_number()) return std::nullopt;
  const double x = v.get<double>();
  auto bound = [&](const char* key) -> std::optional<double> {
    const auto b = schema.find(key);
    if (b == schema.end() || !b->is_number()) return std::nullopt;
    return b->get<double>();
  };
  const std::string w = where_or_root(where);
  if (const auto b = bound("minimum"); b && x < *b)
    return w + ": " + shown(v) + " is below the minimum, " + shown(schema["minimum"]);
  if (const auto b = bound("maximum"); b && x > *b)
    return w + ": " + shown(v) + " is above the maximum, " + shown(schema["maximum"]);
  if (const auto b = bound("exclusiveMinimum"); b && x <= *b)
    return w + ": " + shown(v) + " is not above " + shown(schema["exclusiveMinimum"]);
  if (const auto b = bound("exclusiveMaximum"); b && x >= *b)
    return w + ": " + shown(v) + " is not below " + shown(schema["exclusiveMaximum"]);
  return std::nullopt;
}

std::optional<std::string> check_string(const Json& schema, const Json& v, const std::string& where) {
  if (!v.is_string()) return std::nullopt;
  const std::string& s = v.get_ref<const std::string&>();
  const std::string w = where_or_root(where);
  const std::size_t n = code_points(s);
  if (const auto m = schema.find("minLength"); m != schema.end() && m->is_number() && n < m->get<double>())
    return w + ": " + shown(v) + " is shorter than " + shown(*m) + " characters";
  if (const auto m = schema.find("maxLength"); m != schema.end() && m->is_number() && n > m->get<double>())
    return w + ": " + shown(v) + " is longer than " + shown(*m) + " characters";
  if (const auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
    bool matched = false;
    if (s.size() <= kMaxPatternInput) {
      try {
        matched = std::regex_search(s, std::regex(p->get<std::string>(), std::regex::ECMAScript));
      } catch (const std::regex_error&) {
        return w + ": the schema's pattern " + shown(*p) + " is not a regular expression Chock reads";
      }
    }
    if (!matched) return w + ": " + shown(v) + " does not match " + p->get<std::string>();
  }
  return std::nullopt;
}

std::optional<std::string> check_array(const Json& schema, const Json& v, const std::string& where) {
  if (!v.is_array()) return std::nullopt;
  const std::string w = where_or_root(where);
  const double n = static_cast<double>(v.size());
  if (const auto m = schema.find("minItems"); m != schema.end() && m->is_number() && n < m->get<double>())
    return w + ": at least " + shown(*m) + " item(s), not " + std::to_string(v.size());
  if (const auto m = schema.find("maxItems"); m != schema.end() && m->is_number() && n > m->get<double>())
    return w + ": at most " + shown(*m) + " item(s), not " + std::to_string(v.size());
  if (const auto items = schema.find("items"); items != schema.end())
    for (std::size_t i = 0; i < v.size(); ++i)
      if (auto e = check_at(*items, v[i], w + "[" + std::to_string(i) + "]")) return e;
  return std::nullopt;
}

std::optional<std::string> check_object(const Json& schema, const Json& v, const std::string& where) {
  if (!v.is_object()) return std::nullopt;
  const auto props = schema.find("properties");
  const bool have_props = props != schema.end() && props->is_object();
  if (const auto req = schema.find("required"); req != schema.end() && req->is_array())
    for (const auto& name : *req)
      if (name.is_string() && !v.contains(name.get<std::string>()))
        return joined_path(where, name) + ": required, and missing";
  const auto extra = schema.find("additionalProperties");
  for (const auto& [key, value] : v.items()) {
    const std::string at = joined_path(where, key_shown(key));
    if (have_props && props->contains(key)) {
      if (auto e = check_at((*props)[key], value, at)) return e;
      continue;
    }
    if (extra == schema.end()) continue;
    if (extra->is_boolean() && !extra->get<bool>()) {
      std::string names;
      if (have_props)
        for (const auto& [name, unused] : props->items()) names += (names.empty() ? "" : ", ") + name;
      return at + ": not a parameter" +
             (names.empty() ? std::string(" (there are none)") : " (the parameters are " + names + ")");
    }
    if (auto e = check_at(*extra, value, at)) return e;
  }
  return std::nullopt;
}

std::optional<std::string> check_at(const Json& schema, const Json& v, const std::string& where) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return std::nullopt;
    return where_or_root(where) + ": not allowed";
  }
  if (!schema.is_object()) return std::nullopt;
  if (auto e = check_type(schema, v, where)) return e;
  if (const auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    std::string choices;
    for (const auto& x : *e) {
      found = found || x == v;
      choices += (choices.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : shown(x));
    }
    if (!found) return where_or_root(where) + ": " + shown(v) + " is not one of " + choices;
  }
  if (const auto c = schema.find("const"); c != schema.end() && *c != v)
    return where_or_root(where) + ": " + shown(v) + " is not " + shown(*c);
  if (auto e = check_number(schema, v, where)) return e;
  if (auto e = check_string(schema, v, where)) return e;
  if (auto e = check_array(schema, v, where)) return e;
  if (auto e = check_object(schema, v, where)) return e;
  if (const auto any = schema.find("anyOf"); any != schema.end() && any->is_array() && !any->empty()) {
    std::optional<std::string> first;
    for (const auto& alternative : *any) {
      auto e = check_at(alternative, v, where);
      if (!e) return std::nullopt;
      if (!first) first = e;
    }
    return where_or_root(where) + ": matches none of its " + std::to_string(any->size()) +
           " forms (the first: " + *first + ")";
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> unsupported(const Json& schema) {
  if (schema.is_boolean()) return std::nullopt;
  if (!schema.is_object()) return std::string("(a schema is an object or a boolean)");
  for (const auto& [key, value] : schema.items()) {
    if (known_keywords().count(key) == 0) return key;
    std::optional<std::string> inner;
    if (key == "properties") {
      if (!value.is_object()) return key;
      for (const auto& [name, sub] : value.items()) {
        if (!(inner = unsupported(sub))) continue;
        std::string where = key;
        return where.append(".").append(name).append(".").append(*inner);
      }
    } else if (key == "additionalProperties" || key == "items") {
      if ((inner = unsupported(value))) return key + "." + *inner;  // an array of items (a tuple) too
    } else if (key == "anyOf") {
      if (!value.is_array()) return key;
      for (std::size_t i = 0; i < value.size(); ++i)
        if ((inner = unsupported(value[i]))) return key + "[" + std::to_string(i) + "]." + *inner;
    } else if (key == "pattern") {
      try {
        if (!value.is_string()) return key;
        (void)std::regex(value.get<std::string>(), std::regex::ECMAScript);
      } catch (const std::regex_error&) {
        return key;
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> check(const Json& schema, const Json& value) {
  return check_at(schema, value, "");
}

}  // namespace chock::mcp::schema
