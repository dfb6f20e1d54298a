// The schemas of Chock's three files, read from the ZON value tree. Every
// refusal names the place in the file it is about.
#include "config/chock_zon.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <initializer_list>

#include "chock/net.hpp"
#include "devices/identify.hpp"
#include "util/dirs.hpp"
#include "util/fd.hpp"
#include "util/passwd.hpp"
#include "util/size.hpp"

namespace chock::config {

namespace {

using zon::Value;

// The floor refuses memory below this and more processes than this
// (rlimits.cpp); refusing here as well puts the file's position on it.
constexpr std::uint64_t kMinMemoryBytes = 1ULL << 20;
constexpr std::uint64_t kMaxProcesses = 1ULL << 22;
constexpr std::size_t kMaxPathBytes = 4096;
constexpr std::size_t kMaxCarry = 64;

// `text` in quotes for a message, every byte outside printable ASCII as \xNN
// so that a file cannot write escape sequences to the terminal.
std::string quote(std::string_view text) {
  const char* digits = "0123456789abcdef";
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e || c == '"' || c == '\\') {
      out += "\\x";
      out += digits[u >> 4];
      out += digits[u & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Reads one file's values; `path_` is the name errors and origins carry.
class Schema {
 public:
  explicit Schema(const std::string& path) : path_(path) {}

  Error at(const Value& v, std::string_view what) const { return zon::error_at(path_, v.at, what); }
  std::string origin(const Value& v) const { return zon::origin(path_, v.at); }

  Expected<void> expect(const Value& v, Value::Kind kind) const {
    if (v.kind == kind) return {};
    return at(v, std::string("expected ") + zon::kind_name(kind) + ", found " + zon::kind_name(v.kind));
  }
  Expected<void> expect_struct(const Value& v) const {
    if (v.is_struct()) return {};
    return at(v,
              std::string("expected a struct such as .{ .name = value }, found ") + zon::kind_name(v.kind));
  }
  Expected<void> expect_tuple(const Value& v) const {
    if (v.is_tuple()) return {};
    return at(v, std::string("expected a tuple such as .{ a, b }, found ") + zon::kind_name(v.kind));
  }

  // Refuses a field whose name is not in `allowed`; `where` names the struct.
  Expected<void> only_keys(const Value& s, std::initializer_list<std::string_view> allowed,
                           std::string_view where) const {
    for (const zon::Field& f : s.fields) {
      bool known = false;
      for (std::string_view name : allowed) known = known || f.name == name;
      if (known) continue;
      std::string list;
      std::size_t i = 0;
      for (std::string_view name : allowed) {
        if (i > 0) list += i + 1 == allowed.size() ? " and " : ", ";
        list += ".";
        list += name;
        ++i;
      }
      return zon::error_at(path_, f.at,
                           "unknown key '." + f.name + "' in " + std::string(where) +
                               (allowed.size() == 1 ? "; the only key there is " : "; the keys there are ") +
                               list);
    }
    return {};
  }

  Expected<std::vector<policy::Rule>> rules(const Value& policy) const {
    if (auto ok = expect_struct(policy); !ok) return ok.error();
    if (auto ok = only_keys(policy, {"rules"}, ".policy"); !ok) return ok.error();
    std::vector<policy::Rule> out;
    const zon::Field* rules = policy.find("rules");
    if (rules == nullptr) return out;
    if (auto ok = expect_tuple(rules->value); !ok) return ok.error();
    for (const Value& item : rules->value.items) {
      auto rule = one_rule(item);
      if (!rule) return rule.error();
      out.push_back(std::move(*rule));
    }
    return out;
  }

  // .devices = .{ .{ .action = "device.usb.1d50.6018" }, ... }
  Expected<std::vector<DeviceEntry>> devices(const Value& list) const {
    if (auto ok = expect_tuple(list); !ok) return ok.error();
    std::vector<DeviceEntry> out;
    for (const Value& item : list.items) {
      if (out.size() == kMaxCarry) return at(item, "more than " + std::to_string(kMaxCarry) + " devices");
      if (auto ok = expect_struct(item); !ok) return ok.error();
      if (auto ok = only_keys(item, {"action"}, "a device"); !ok) return ok.error();
      const zon::Field* action = item.find("action");
      if (action == nullptr)
        return at(item, "a device needs .action, as in .{ .action = \"device.path.dev.kvm\" }");
      if (auto ok = expect(action->value, Value::Kind::string); !ok) return ok.error();
      if (auto valid = policy::validate_action(action->value.text); !valid)
        return at(action->value, valid.error().what);
      if (auto name = devices::parse_action(action->value.text); !name)
        return at(action->value, name.error().what);
      out.push_back(DeviceEntry{action->value.text, origin(item)});
    }
    return out;
  }

  Expected<policy::Rule> one_rule(const Value& item) const {
    if (auto ok = expect_struct(item); !ok) return ok.error();
    if (auto ok = only_keys(item, {"action", "decision"}, "a rule"); !ok) return ok.error();
    const zon::Field* action = item.find("action");
    const zon::Field* decision = item.find("decision");
    if (action == nullptr || decision == nullptr)
      return at(item, std::string("a rule needs ") + (action == nullptr ? ".action" : ".decision") +
                          ", as in .{ .action = \"sandbox.jit\", .decision = .allow }");
    if (auto ok = expect(action->value, Value::Kind::string); !ok) return ok.error();
    if (auto valid = policy::validate_action(action->value.text); !valid)
      return at(action->value, valid.error().what);
    if (decision->value.kind != Value::Kind::enum_literal)
      return at(decision->value, std::string("expected an enum literal (.allow, .ask or .deny), found ") +
                                     zon::kind_name(decision->value.kind));
    auto parsed = policy::parse_decision(decision->value.text);
    if (!parsed)
      return at(decision->value,
                "unknown decision '." + decision->value.text + "'; a decision is .allow, .ask or .deny");
    return policy::Rule{action->value.text, *parsed, origin(item)};
  }

  // A tuple of at most `max` strings, each checked (and perhaps rewritten) by `entry`.
  template <class Entry>
  Expected<std::vector<std::string>> strings(const Value& list, const std::string& key, std::size_t max,
                                             Entry entry) const {
    if (auto ok = expect_tuple(list); !ok) return ok.error();
    std::vector<std::string> out;
    for (const Value& item : list.items) {
      if (out.size() == max) return at(item, "more than " + std::to_string(max) + " " + key + " entries");
      if (auto ok = expect(item, Value::Kind::string); !ok) return ok.error();
      Expected<std::string> value = entry(item);
      if (!value) return std::move(value).error();
      out.push_back(std::move(*value));
    }
    return out;
  }

  // `project_dir` empty: the bundle's entries, which name no project to look in.
  Expected<std::vector<std::string>> deny_read(const Value& list, const std::string& project_dir) const {
    return strings(list, "deny_read", kMaxDenyRead, [&](const Value& item) -> Expected<std::string> {
      if (auto ok = deny_entry(item, project_dir); !ok) return ok.error();
      return item.text;
    });
  }

  // What every path of the project named in a file must be: relative, no
  // glob, no '.', '..' or empty component. `key` names the list in messages.
  Expected<void> project_path(const Value& item, const std::string& key, const char* takes) const {
    const std::string& p = item.text;
    const std::string quoted = quote(p);
    if (p.empty()) return at(item, "an empty " + key + " entry");
    if (p.find('\0') != std::string::npos) return at(item, "a " + key + " entry holds a NUL byte");
    if (p.size() > kMaxPathBytes) return at(item, "a " + key + " entry longer than 4096 bytes");
    if (p.front() == '/')
      return at(item, quoted + " is absolute; " + key + " takes paths relative to the project");
    if (p.find_first_of("*?[") != std::string::npos)
      return at(item, quoted + " is a glob; " + key + " takes " + takes + " paths, one entry a " + takes);
    if (p.back() == '/') return at(item, quoted + " ends in '/'; write " + key + " entries without it");
    std::size_t begin = 0;
    while (begin <= p.size()) {
      std::size_t end = p.find('/', begin);
      if (end == std::string::npos) end = p.size();
      const std::string_view part(p.data() + begin, end - begin);
      if (part.empty()) return at(item, quoted + " has an empty component ('//')");
      if (part == "." || part == "..")
        return at(item, quoted + " has a '" + std::string(part) + "' component; write the path without it");
      begin = end + 1;
    }
    return {};
  }

  Expected<void> deny_entry(const Value& item, const std::string& project_dir) const {
    const std::string& p = item.text;
    const std::string quoted = quote(p);
    if (!p.empty() && p.back() == '/')
      return at(item, quoted + " ends in '/'; deny_read takes files, not directories");
    if (auto ok = project_path(item, "deny_read", "file"); !ok) return ok;
    if (p == "chock.zon") return at(item, "chock.zon itself cannot be denied: the sandbox reads it");
    if (!project_dir.empty()) {
      struct stat st {};
      const std::string full = project_dir + "/" + p;
      if (::lstat(full.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        return at(item, quoted + " is a directory in the project; deny_read takes files");
    }
    return {};
  }

  // .allow_private of the operator's file: ranges inside the private ones,
  // for internal registries. Loopback, link-local, metadata and the rest
  // cannot be widened by anyone, so a range naming them is refused.
  Expected<std::vector<std::string>> allow_private(const Value& list) const {
    return strings(list, "allow_private", kMaxCarry, [&](const Value& item) -> Expected<std::string> {
      auto range = net::parse_cidr(item.text);
      if (!range) return at(item, range.error().what);
      if (!net::within_private(*range))
        return at(item, quote(item.text) +
                            " is not inside a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, "
                            "100.64.0.0/10, fc00::/7); only those can be allowed");
      return item.text;
    });
  }

  // .toolchain_paths of the operator's file: absolute (or ~/...), no '.' or
  // '..' component, an existing directory reached without a symbolic link.
  Expected<std::vector<std::string>> toolchain_paths(const Value& list, const std::string& home) const {
    return strings(list, "toolchain_paths", kMaxCarry, [&](const Value& item) -> Expected<std::string> {
      std::string p = item.text;
      const std::string quoted = quote(p);
      if (p.starts_with("~/")) {
        if (home.empty()) return at(item, quoted + " starts with ~/, and there is no home directory");
        p = home + p.substr(1);
      }
      if (p.empty() || p.front() != '/')
        return at(item, quoted + " is relative; toolchain_paths takes absolute paths (or ~/...)");
      if (p.find('\0') != std::string::npos || p.size() > kMaxPathBytes)
        return at(item, quoted + " is not a path");
      while (p.size() > 1 && p.back() == '/') p.pop_back();
      for (std::size_t begin = 1; begin < p.size();) {
        std::size_t end = p.find('/', begin);
        if (end == std::string::npos) end = p.size();
        const std::string_view part(p.data() + begin, end - begin);
        if (part.empty() || part == "." || part == "..")
          return at(item, quoted + " has an empty, '.' or '..' component; write the plain path");
        begin = end + 1;
      }
      // Every component from the root down exists and none is a link (a bind never follows one).
      for (std::size_t end = p.find('/', 1);; end = p.find('/', end + 1)) {
        const std::string prefix = p.substr(0, end);
        struct stat st {};
        const std::string where =
            quoted + ": " + prefix;  // NOLINT(performance-inefficient-string-concatenation)
        if (::lstat(prefix.c_str(), &st) != 0) return at(item, where + " does not exist");
        if (S_ISLNK(st.st_mode))
          return at(item, where + " is a symbolic link; name the directory it leads to");
        if (end == std::string::npos) {
          if (!S_ISDIR(st.st_mode)) return at(item, quoted + " is not a directory");
          break;
        }
      }
      return p;
    });
  }

  // .carry: directories the git workspace shows copy-on-write from the real
  // project (node_modules, .venv). A denied path is never carried, nor .git;
  // a denied file inside a carried directory is covered there.
  Expected<std::vector<std::string>> carry(const Value& list, const std::string& project_dir,
                                           const std::vector<std::string>& denied) const {
    return strings(list, "carry", kMaxCarry, [&](const Value& item) -> Expected<std::string> {
      if (auto ok = project_path(item, "carry", "directory"); !ok) return ok.error();
      const std::string& p = item.text;
      const std::string quoted = quote(p);
      if (p == ".git" || p.starts_with(".git/") || p.find("/.git/") != std::string::npos ||
          p.ends_with("/.git"))
        return at(item, quoted + " is or holds .git; the repository is never carried");
      for (const auto& d : denied)
        if (d == p || p.starts_with(d + "/"))
          return at(item,
                    quoted + " is denied by deny_read (" + quote(d) + "); a denied path is never carried");
      struct stat st {};
      const std::string full = (project_dir.empty() ? std::string(".") : project_dir) + "/" + p;
      if (::lstat(full.c_str(), &st) == 0 && !S_ISDIR(st.st_mode))
        return at(item, quoted + (S_ISLNK(st.st_mode) ? " is a symbolic link" : " is not a directory") +
                            "; carry takes directories of the project");
      return p;
    });
  }

  Expected<LimitsSpec> limits(const Value& s) const {
    if (auto ok = expect_struct(s); !ok) return ok.error();
    if (auto ok = only_keys(s, {"processes", "memory", "timeout", "disk", "cache"}, ".limits"); !ok)
      return ok.error();
    LimitsSpec out;
    if (const zon::Field* f = s.find("processes")) {
      auto v = processes(f->value);
      if (!v) return v.error();
      out.processes = std::move(*v);
    }
    if (const zon::Field* f = s.find("memory")) {
      auto v = memory(f->value);
      if (!v) return v.error();
      out.memory = std::move(*v);
    }
    if (const zon::Field* f = s.find("disk")) {
      auto v = size_limit(f->value, "disk", "leaves a call no room to write its output");
      if (!v) return v.error();
      out.disk = std::move(*v);
    }
    if (const zon::Field* f = s.find("cache")) {
      auto v = size_limit(f->value, "cache", "leaves a toolchain no room for its cache");
      if (!v) return v.error();
      out.cache = std::move(*v);
    }
    if (const zon::Field* f = s.find("timeout")) {
      auto v = timeout(f->value);
      if (!v) return v.error();
      out.timeout = std::move(*v);
    }
    return out;
  }

  // Seconds: 600, or "90s", "10m", "2h".
  Expected<LimitValue> timeout(const Value& v) const {
    LimitValue out{.origin = origin(v)};
    std::uint64_t seconds = 0;
    if (v.kind == Value::Kind::integer) {
      if (v.negative || v.magnitude == 0) return at(v, "timeout must be at least 1 second");
      seconds = v.magnitude;
    } else if (v.kind == Value::Kind::string) {
      const std::string& t = v.text;
      const std::uint64_t unit = t.empty()         ? 0
                                 : t.back() == 's' ? 1
                                 : t.back() == 'm' ? 60
                                 : t.back() == 'h' ? 3600
                                                   : 0;
      std::uint64_t n = 0;
      const char* end = t.data() + t.size() - 1;
      auto [ptr, ec] = std::from_chars(t.data(), end, n);
      if (unit == 0 || t.size() < 2 || ec != std::errc() || ptr != end || n == 0 || n > kMaxTimeoutSeconds)
        return at(v, quote(t) + " is not a duration; a timeout looks like 600, \"90s\", \"10m\" or \"2h\"");
      seconds = n * unit;
    } else {
      return at(v, std::string("expected seconds such as 600 or a duration such as \"10m\", found ") +
                       zon::kind_name(v.kind));
    }
    if (seconds > kMaxTimeoutSeconds) return at(v, "timeout is at most a week (604800 seconds)");
    out.value = seconds;
    return out;
  }

  Expected<LimitValue> processes(const Value& v) const {
    LimitValue out{.origin = origin(v)};
    if (v.kind == Value::Kind::string) return share(v, "processes", std::move(out));
    if (v.kind != Value::Kind::integer)
      return at(v, std::string("expected an integer such as 256 or a share such as \"50%\", found ") +
                       zon::kind_name(v.kind));
    if (v.negative || v.magnitude == 0)
      return at(v, "processes must be at least 1: the program itself is one");
    if (v.magnitude > kMaxProcesses) return at(v, "processes is at most 4194304, the kernel's own limit");
    out.value = v.magnitude;
    return out;
  }

  Expected<LimitValue> memory(const Value& v) const {
    LimitValue out{.origin = origin(v)};
    if (v.kind != Value::Kind::string)
      return at(
          v, std::string("expected a string such as \"4GiB\" or \"50%\", found ") + zon::kind_name(v.kind));
    if (!v.text.empty() && v.text.back() == '%') return share(v, "memory", std::move(out));
    // A size is printable ASCII; anything else would reach the terminal raw in parse_size's message.
    for (char c : v.text)
      if (c < 0x20 || c > 0x7e)
        return at(v, quote(v.text) + " is not a size; sizes look like \"4096\", \"512MiB\" or \"4GiB\"");
    auto bytes = parse_size("memory", v.text);
    if (!bytes) return at(v, bytes.error().what);
    if (*bytes < kMinMemoryBytes) return at(v, "memory below 1MiB leaves a program no room to start");
    out.value = *bytes;
    return out;
  }

  // A size and nothing else (.disk: what a call may write to the data
  // directory's file system; .cache: the project's toolchain cache).
  Expected<LimitValue> size_limit(const Value& v, const std::string& name, const char* too_small) const {
    LimitValue out{.origin = origin(v)};
    if (v.kind != Value::Kind::string)
      return at(v, std::string("expected a size such as \"10GiB\", found ") + zon::kind_name(v.kind));
    for (char c : v.text)
      if (c < 0x20 || c > 0x7e || c == '%')
        return at(
            v, quote(v.text) + " is not a size; the " + name + " limit looks like \"512MiB\" or \"10GiB\"");
    auto bytes = parse_size(name, v.text);
    if (!bytes) return at(v, bytes.error().what);
    if (*bytes < kMinMemoryBytes) return at(v, name + " below 1MiB " + too_small);
    out.value = *bytes;
    return out;
  }

  // "N%" with N from 1 to 100.
  Expected<LimitValue> share(const Value& v, std::string_view limit, LimitValue out) const {
    const std::string& t = v.text;
    const std::string quoted = quote(t);
    const std::string digits = t.empty() || t.back() != '%' ? t : t.substr(0, t.size() - 1);
    bool all_digits = !digits.empty() && digits.size() < t.size();
    for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
    if (!all_digits)
      return at(v, quoted + " is not a share; " + std::string(limit) + " takes " +
                       (limit == "memory" ? "a size such as \"4GiB\"" : "a count such as 256") +
                       " or a whole percent such as \"50%\"");
    // Past three digits the number is over 100 whatever it is.
    std::uint64_t percent = 1000;
    if (digits.size() <= 3) std::from_chars(digits.data(), digits.data() + digits.size(), percent);
    if (percent == 0) return at(v, "a share of 0% leaves nothing; a share is 1% to 100%");
    if (percent > 100) return at(v, quoted + " is more than the whole machine; a share is 1% to 100%");
    out.kind = LimitValue::Kind::percent;
    out.value = percent;
    return out;
  }

  Expected<Network> network(const Value& v) const {
    if (v.kind != Value::Kind::enum_literal)
      return at(v, std::string("expected an enum literal (.none, .filtered or .host), found ") +
                       zon::kind_name(v.kind));
    if (v.text == "none") return Network::none;
    if (v.text == "filtered") return Network::filtered;
    if (v.text == "host") return Network::host;
    return at(v, "unknown network '." + v.text + "'; the network is .none, .filtered or .host");
  }

 private:
  const std::string& path_;
};

// The file at `path`, or nullopt when it does not exist and `may_be_absent`.
// Reads one byte past the cap so that the ZON reader refuses a file that is too long.
Expected<std::optional<std::string>> read_text(const std::string& path, const char* what,
                                               bool may_be_absent) {
  // O_NONBLOCK so that a FIFO in the file's place cannot hang the read.
  const int raw = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (raw < 0) {
    if (errno == ENOENT && may_be_absent) return std::optional<std::string>();
    return sys_error(what, path);
  }
  const UniqueFd fd(raw);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error(what, path);
  if (!S_ISREG(st.st_mode))
    return Error{std::string(what) + " (not a regular file)", path, S_ISDIR(st.st_mode) ? EISDIR : 0};
  std::string text(kMaxFileBytes + 1, '\0');
  std::size_t filled = 0;
  while (filled < text.size()) {
    const ssize_t n = ::read(fd.get(), text.data() + filled, text.size() - filled);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(what, path);
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  text.resize(filled);
  return std::optional<std::string>(std::move(text));
}

// Reads `key` of the file's top-level struct with `read` into `out`, when
// the file has that key.
template <class T, class Read>
Expected<void> take(const zon::Value& tree, const char* key, T& out, Read read) {
  const zon::Field* f = tree.find(key);
  if (f == nullptr) return {};
  auto value = read(f->value);
  if (!value) return value.error();
  out = std::move(*value);
  return {};
}

}  // namespace

Expected<ProjectFile> parse_project(std::string_view text, const std::string& display_path,
                                    const std::string& project_dir) {
  auto tree = zon::parse(text, display_path);
  if (!tree) return tree.error();
  const Schema schema(display_path);
  if (auto ok = schema.expect_struct(*tree); !ok) return ok.error();
  if (const zon::Field* f = tree->find("toolchain_paths"))
    return zon::error_at(display_path, f->at,
                         ".toolchain_paths is the operator's (~/.config/chock/config.zon), not a project's: "
                         "a project could name any directory of yours");
  if (const zon::Field* f = tree->find("allow_private"))
    return zon::error_at(display_path, f->at,
                         ".allow_private is the operator's (~/.config/chock/config.zon), not a project's: "
                         "a project could open your private network to its calls");
  if (auto ok = schema.only_keys(*tree, {"policy", "deny_read", "carry", "limits", "network", "devices"},
                                 "chock.zon");
      !ok)
    return ok.error();
  ProjectFile out;
  out.path = display_path;
  out.bytes = std::string(text);
  const std::string dir = project_dir.empty() ? std::string(".") : project_dir;
  Expected<void> taken =
      take(*tree, "policy", out.rules, [&](const zon::Value& v) { return schema.rules(v); });
  if (taken)
    taken = take(*tree, "deny_read", out.deny_read,
                 [&](const zon::Value& v) { return schema.deny_read(v, dir); });
  if (taken)
    taken = take(*tree, "carry", out.carry,
                 [&](const zon::Value& v) { return schema.carry(v, project_dir, out.deny_read); });
  if (taken) taken = take(*tree, "limits", out.limits, [&](const zon::Value& v) { return schema.limits(v); });
  if (taken)
    taken = take(*tree, "network", out.network, [&](const zon::Value& v) { return schema.network(v); });
  if (taken)
    taken = take(*tree, "devices", out.devices, [&](const zon::Value& v) { return schema.devices(v); });
  if (!taken) return taken.error();
  return out;
}

Expected<ProjectFile> read_project(const std::string& project_dir) {
  const std::string path = project_dir + "/chock.zon";
  auto text = read_text(path, "read the project's chock.zon", true);
  if (!text) return text.error();
  if (!*text) return ProjectFile{};
  return parse_project(**text, path, project_dir);
}

Expected<OperatorFile> parse_operator(std::string_view text, const std::string& display_path) {
  auto tree = zon::parse(text, display_path);
  if (!tree) return tree.error();
  const Schema schema(display_path);
  if (auto ok = schema.expect_struct(*tree); !ok) return ok.error();
  if (auto ok = schema.only_keys(
          *tree, {"limits", "toolchain_paths", "allow_private", "bases_max_size", "link_base_index"},
          "the operator's config.zon");
      !ok)
    return ok.error();
  OperatorFile out;
  out.path = display_path;
  Expected<void> taken =
      take(*tree, "limits", out.limits, [&](const zon::Value& v) { return schema.limits(v); });
  if (taken)
    taken = take(*tree, "toolchain_paths", out.toolchain_paths,
                 [&](const zon::Value& v) { return schema.toolchain_paths(v, home_directory()); });
  if (taken)
    taken = take(*tree, "allow_private", out.allow_private,
                 [&](const zon::Value& v) { return schema.allow_private(v); });
  if (taken)
    taken = take(*tree, "bases_max_size", out.bases_max_bytes,
                 [&](const zon::Value& v) -> Expected<std::optional<std::uint64_t>> {
                   auto size = schema.size_limit(v, "bases_max_size", "would keep no shared base");
                   if (!size) return size.error();
                   return std::optional<std::uint64_t>(size->value);
                 });
  if (taken)
    taken = take(*tree, "link_base_index", out.link_base_index, [&](const zon::Value& v) -> Expected<bool> {
      if (auto ok = schema.expect(v, zon::Value::Kind::boolean); !ok) return ok.error();
      return v.boolean;
    });
  if (!taken) return taken.error();
  return out;
}

Expected<OperatorFile> read_operator() {
  // Nowhere to look (no XDG_CONFIG_HOME, no home): no operator file.
  auto dir = chock_dir(Xdg::config);
  if (!dir) return OperatorFile{};
  const std::string path = *dir + "/config.zon";
  auto text = read_text(path, "read the operator's config.zon", true);
  if (!text) return text.error();
  if (!*text) return OperatorFile{};
  return parse_operator(**text, path);
}

Expected<BundleFile> parse_bundle(std::string_view text, const std::string& display_path) {
  auto tree = zon::parse(text, display_path);
  if (!tree) return tree.error();
  const Schema schema(display_path);
  if (auto ok = schema.expect_struct(*tree); !ok) return ok.error();
  if (auto ok = schema.only_keys(*tree, {"policy", "limits", "deny_read"}, "the organisation bundle"); !ok)
    return ok.error();
  BundleFile out;
  out.path = display_path;
  Expected<void> taken =
      take(*tree, "policy", out.rules, [&](const zon::Value& v) { return schema.rules(v); });
  if (taken)
    taken =
        take(*tree, "deny_read", out.deny_read, [&](const zon::Value& v) { return schema.deny_read(v, {}); });
  if (taken) taken = take(*tree, "limits", out.limits, [&](const zon::Value& v) { return schema.limits(v); });
  if (!taken) return taken.error();
  return out;
}

Expected<BundleFile> read_bundle(const std::string& path) {
  const bool named = !path.empty();
  const std::string chosen = named ? path : "/etc/chock/bundle.zon";
  auto text = read_text(chosen, "read the organisation bundle", !named);
  if (!text) return text.error();
  if (!*text) return BundleFile{};
  return parse_bundle(**text, chosen);
}

}  // namespace chock::config
