// A session's record (session.json) and the names it holds, checked
// without touching the disk: what the session store writes and reads, and
// what scripts/fuzz-session feeds arbitrary bytes.
#include "workspace/session_record.hpp"

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "util/json.hpp"

namespace chock::workspace {

const char* kind_name(Kind kind) {
  return kind == Kind::git ? "git" : "overlay";
}

namespace {

std::vector<std::string> path_components(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t pos = 0;
  for (;;) {
    std::size_t next = path.find('/', pos);
    parts.push_back(path.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return parts;
}

}  // namespace

Expected<void> validate_session_id(const std::string& id) {
  bool ok = !id.empty() && id.size() <= 64;
  for (std::size_t i = 0; ok && i < id.size(); ++i) {
    char c = id[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    ok = alnum || (i > 0 && (c == '-' || c == '_'));
  }
  if (!ok)
    return Error{
        "bad session id '" + id + "': use 1 to 64 of a-z, 0-9, '-' and '_', starting with a letter or digit",
        "", 0, Errc::bad_config};
  return {};
}

Expected<void> validate_deny_path(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error{"--deny " + (path.empty() ? std::string("''") : path) + ": " + why, "", 0, Errc::bad_config};
  };
  if (path.empty()) return bad("empty path");
  if (path[0] == '/') return bad("absolute paths are refused; name a file relative to the project");
  if (path.back() == '/') return bad("names a directory; name files");
  if (path.find_first_of("*?[") != std::string::npos) return bad("globs are refused; name each file");
  if (path.find('\0') != std::string::npos || path.find('\n') != std::string::npos)
    return bad("control characters are refused");
  for (const auto& part : path_components(path)) {
    if (part.empty()) return bad("empty path component ('//')");
    if (part == "..") return bad("'..' is refused; name a file inside the project");
    if (part == ".") return bad("'.' components are refused; write the plain relative path");
    if (part == ".git") return bad("paths inside .git are refused");
  }
  return {};
}

Expected<void> validate_carry_path(const std::string& path) {
  auto bad = [&](const std::string& why) {
    return Error{"--carry " + (path.empty() ? std::string("''") : path) + ": " + why, "", 0,
                 Errc::bad_config};
  };
  if (path.empty()) return bad("empty path");
  if (path[0] == '/') return bad("absolute paths are refused; name a directory relative to the project");
  if (path.back() == '/') return bad("write the directory without a trailing '/'");
  if (path.find_first_of("*?[") != std::string::npos) return bad("globs are refused; name each directory");
  for (char c : path)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return bad("control characters are refused");
  for (const auto& part : path_components(path)) {
    if (part.empty()) return bad("empty path component ('//')");
    if (part == "..") return bad("'..' is refused; a carried path never leaves the project");
    if (part == ".") return bad("'.' components are refused; write the plain relative path");
    if (part == ".git") return bad("the repository is never carried");
  }
  return {};
}

namespace {

// A SHA-1 or SHA-256 as git writes it: 40 or 64 lowercase hex digits.
bool is_object_hash(std::string_view hash) {
  if (hash.size() != 40 && hash.size() != 64) return false;
  for (char c : hash)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

bool is_base_key(std::string_view name) {
  const auto dash = name.find('-');
  if (dash == 0 || dash == std::string_view::npos || dash > 10) return false;
  for (std::size_t i = 0; i < dash; ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return is_object_hash(name.substr(dash + 1));
}

bool is_shared_index_name(std::string_view name) {
  constexpr std::string_view prefix = "sharedindex.";
  return name.starts_with(prefix) && is_object_hash(name.substr(prefix.size()));
}

namespace {

nlohmann::json json_of(const std::optional<OwnerShift>& shift) {
  if (!shift) return nullptr;
  return nlohmann::json{{"uid_from", shift->uid_from},
                        {"gid_from", shift->gid_from},
                        {"uid_to", shift->uid_to},
                        {"gid_to", shift->gid_to}};
}

// A whole number of type T, or a parse error: nlohmann's get<T> of 2e79, or
// of -1 into a uid, converts out of range (undefined behaviour, found by
// session_fuzz).
template <typename T>
T whole(const nlohmann::json& j, const char* key) {
  const nlohmann::json& v = j.at(key);
  if (v.is_number_unsigned()) {
    const auto n = v.get<std::uint64_t>();
    if (n <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(n);
  } else if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if constexpr (std::is_signed_v<T>)
      if (n >= static_cast<std::int64_t>(std::numeric_limits<T>::min()) &&
          n <= static_cast<std::int64_t>(std::numeric_limits<T>::max()))
        return static_cast<T>(n);
  }
  throw nlohmann::json::type_error::create(302, std::string(key) + " is not a whole number in range", &v);
}

std::optional<OwnerShift> shift_of(const nlohmann::json& j) {
  if (j.is_null()) return std::nullopt;
  return OwnerShift{whole<uid_t>(j, "uid_from"), whole<gid_t>(j, "gid_from"), whole<uid_t>(j, "uid_to"),
                    whole<gid_t>(j, "gid_to")};
}

}  // namespace

nlohmann::json session_record(const Session& s) {
  nlohmann::json carry_shifts = nlohmann::json::array();
  for (const auto& shift : s.carry_shift) carry_shifts.push_back(json_of(shift));
  return nlohmann::json{
      {"id", s.id},
      {"kind", kind_name(s.kind)},
      {"project", s.project},
      {"owner", s.owner},
      {"deny", s.deny},
      {"carry", s.carry},
      {"created", s.created},
      {"last_run", s.last_run},
      {"common_dir", s.common_dir},
      {"base", s.base},
      {"shared_base", s.shared_base},
      {"shared_index", s.shared_index},
      {"index_below", s.index_below},
      {"applied", s.applied},
      {"lower", s.lower},
      {"carry_shift", carry_shifts},
      {"lower_shift", json_of(s.lower_shift)},
      {"adopted_run", s.adopted_run},
      {"always", s.always},
      {"kept", s.kept},
  };
}

Expected<Session> parse_session_record(std::string_view text, const std::string& id, const std::string& dir) {
  auto parsed = parse_json(text);
  if (!parsed) return Error{"is damaged (" + parsed.error().what + ")", "", 0};
  try {
    const nlohmann::json& j = *parsed;
    Session s;
    s.id = j.at("id").get<std::string>();
    if (s.id != id) return Error{"names another session", "", 0};
    const auto kind = j.at("kind").get<std::string>();
    if (kind != "git" && kind != "overlay")
      return Error{"is damaged (a kind that is neither git nor overlay)", "", 0};
    s.kind = kind == "git" ? Kind::git : Kind::overlay;
    s.project = j.at("project").get<std::string>();
    if (!s.project.starts_with('/'))
      return Error{"is damaged (a project that is not an absolute path)", "", 0};
    s.dir = dir;
    s.owner = whole<uid_t>(j, "owner");
    s.deny = j.at("deny").get<std::vector<std::string>>();
    // Sessions made before .carry carry nothing.
    if (j.contains("carry")) s.carry = j.at("carry").get<std::vector<std::string>>();
    for (const auto& c : s.carry)
      if (auto v = validate_carry_path(c); !v)
        return Error{"is damaged (" + v.error().message() + ")", "", 0};
    s.created = whole<std::int64_t>(j, "created");
    s.last_run = whole<std::int64_t>(j, "last_run");
    s.common_dir = j.at("common_dir").get<std::string>();
    s.base = j.at("base").get<std::string>();
    // Sessions made before shared bases have a checkout of their own.
    if (j.contains("shared_base")) s.shared_base = j.at("shared_base").get<std::string>();
    if (!s.shared_base.empty() && !is_base_key(s.shared_base))
      return Error{"is damaged (a shared base that is not <uid>-<commit>)", "", 0};
    // Sessions made before split indexes have an index of their own.
    if (j.contains("shared_index")) s.shared_index = j.at("shared_index").get<std::string>();
    if (!s.shared_index.empty() && (s.shared_base.empty() || !is_shared_index_name(s.shared_index)))
      return Error{"is damaged (a shared index that is not sharedindex.<hash> of a shared base)", "", 0};
    // Sessions made before an index below have one of their own.
    if (j.contains("index_below")) s.index_below = j.at("index_below").get<bool>();
    if (s.index_below && (s.shared_base.empty() || !s.shared_index.empty()))
      return Error{"is damaged (an index below without a shared base, or beside a shared index)", "", 0};
    s.applied = j.at("applied").get<std::string>();
    s.lower = j.at("lower").get<std::string>();
    if (j.contains("carry_shift"))
      for (const auto& shift : j.at("carry_shift")) s.carry_shift.push_back(shift_of(shift));
    if (s.carry_shift.size() > s.carry.size())
      return Error{"is damaged (more carry shifts than carried)", "", 0};
    // Sessions made before idmapped lower layers have a copy, or need none.
    if (j.contains("lower_shift")) s.lower_shift = shift_of(j.at("lower_shift"));
    s.adopted_run = whole<std::int64_t>(j, "adopted_run");
    // Sessions made before the policy table have no answers kept.
    if (j.contains("always")) s.always = j.at("always").get<std::vector<std::string>>();
    // Sessions made before prune told kept ones apart: only their last use protects them.
    if (j.contains("kept")) s.kept = j.at("kept").get<bool>();
    return s;
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("is damaged (") + e.what() + ")", "", 0};
  }
}

}  // namespace chock::workspace
