#include "session/call_config.hpp"

#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "session/device_grants.hpp"
#include "session/jit_fallback.hpp"
#include "session/path_check.hpp"
#include "session/toolchain_choice.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"
#include "util/size.hpp"
#include "util/split.hpp"

namespace chock::session {

namespace {

// Where the file tools' fixed program is inside (Request::helper_inside).
constexpr const char* kHelperInside = "/run/chock/bin/chock-helper";

// The call gets a small environment of its own: the caller's tokens and
// keys stay outside.
std::vector<std::string> call_environment(bool plain) {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  // The sanitizers' options are a developer's settings, not secrets; a
  // wrapped server gets none of them.
  static constexpr const char* kPlain[] = {"TERM", "LANG"};
  static constexpr const char* kAll[] = {"TERM",         "LANG",         "LC_ALL",       "LC_CTYPE",
                                         "TZ",           "NO_COLOR",     "ASAN_OPTIONS", "UBSAN_OPTIONS",
                                         "TSAN_OPTIONS", "LSAN_OPTIONS", "MSAN_OPTIONS"};
  if (plain) {
    for (const char* name : kPlain)
      if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  } else {
    for (const char* name : kAll)
      if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  }
  env.emplace_back("HOME=/tmp");
  env.emplace_back("TMPDIR=/tmp");
  return env;
}

// "90 s", "30 min", "2 h": a deadline as a person reads it.
std::string seconds_text(double seconds) {
  char buf[48];
  if (seconds >= 3600 && static_cast<long long>(seconds) % 3600 == 0)
    std::snprintf(buf, sizeof buf, "%lld h", static_cast<long long>(seconds) / 3600);
  else if (seconds >= 60 && static_cast<long long>(seconds) % 60 == 0)
    std::snprintf(buf, sizeof buf, "%lld min", static_cast<long long>(seconds) / 60);
  else
    std::snprintf(buf, sizeof buf, "%g s", seconds);
  return buf;
}

// The PATH the call gets.
std::string path_of(const Config& config) {
  for (const auto& e : *config.env)
    if (e.starts_with("PATH=")) return e.substr(5);
  return {};
}

// No call runs forever: the request's timeout, else the layers' deadline
// (30 min unless lowered). Which one applies, in words.
std::string set_deadline(const Request& request, const config::EffectiveLimits& limits, Config& config) {
  if (request.timeout) {
    config.timeout = *request.timeout;
    return seconds_text(static_cast<double>(request.timeout->count()) / 1000.0) + " (--timeout)";
  }
  config.timeout = std::chrono::seconds(limits.timeout_seconds);
  return seconds_text(static_cast<double>(limits.timeout_seconds)) +
         (limits.timeout_seconds == config::kDefaultTimeoutSeconds
              ? " (Chock's default; .limits.timeout in chock.zon lowers it, --timeout sets it)"
              : " (.limits.timeout)");
}

// The operator's toolchains, the devices the policy lets through, and what
// of the call's PATH it does not have.
void add_host_parts(const CallContext& context, const workspace::Opened& opened, Config& config,
                    log::SessionEvents& events, const Say& say) {
  // Devices the project names and the policy allows, found anew for each call.
  const DeviceGrants devices = grant_devices(context.layers, ::geteuid() == 0);
  config.devices = devices.nodes;
  for (const auto& line : devices.lines) say(printable(line));
  for (const auto& e : devices.exposed) events.add("device.exposed", e);
  // The operator's own toolchains (~/.cargo, ~/.pyenv), read-only at their own paths.
  for (const auto& dir : context.layers.operator_file.toolchain_paths)
    config.binds.push_back(Bind{dir, dir, Access::read_only});
  const PathReport path = check_path(path_of(config), config);
  if (opened.created && !path.absent.empty()) {
    std::string list;
    for (const auto& e : path.absent) list += (list.empty() ? "" : ", ") + e;
    say("PATH entries the sandbox does not have: " + printable(list) +
        " (an operator binds toolchains with .toolchain_paths in ~/.config/chock/config.zon)");
  }
  if (!path.command_line.empty()) say(printable(path.command_line));
}

}  // namespace

Expected<std::string> start_inside(const std::string& root, const std::string& cwd) {
  std::string clean, path = cwd;
  if (!cwd.starts_with('/')) path = root + "/" + cwd;  // NOLINT(performance-inefficient-string-concatenation)
  for (const auto& part : split_nonempty(path, '/')) {
    if (part == ".") continue;
    if (part == "..") {
      if (!clean.empty()) clean.erase(clean.rfind('/'));  // "/.." is "/"
      continue;
    }
    clean += "/" + part;
  }
  if (clean.empty()) clean = "/";
  if (clean != root && !clean.starts_with(root + "/"))
    return Error{"--cwd " + printable(cwd) + " is outside the project " + printable(root), "", 0,
                 Errc::bad_config};
  return clean;
}

Limits call_limits(const config::EffectiveLimits& limits) {
  Limits l;
  l.processes = limits.processes;
  l.memory_bytes = limits.memory_bytes;
  return l;
}

nlohmann::json rule_json(const policy::Answer& answer) {
  nlohmann::json j = {{"decision", policy::decision_name(answer.decision)},
                      {"layer", policy::layer_name(answer.deciding_layer)}};
  j["rule"] = answer.deciding_rule ? nlohmann::json(answer.deciding_rule->origin) : nlohmann::json(nullptr);
  return j;
}

Expected<Built> build_config(const Request& request, const CallContext& context,
                             const workspace::Opened& opened, workspace::Mounter mounter,
                             log::SessionEvents& events, const Say& say) {
  const workspace::Session& s = opened.session;
  const config::EffectiveLimits limits = context.layers.limits();
  Built b;
  Config& config = b.config;
  config.argv = request.argv;
  config.env = call_environment(request.plain_env);
  if (context.shell) use_dev_shell(*context.shell, config);
  // A credential named for a variable: the sentinel, never the secret. The
  // person's own --env of the same name still wins (they chose to pass it).
  if (context.network == Network::filtered) {
    auto stood = session_sentinels(s);
    if (stood) {
      for (const auto& one : *stood) config.env->push_back(one.credential.env + "=" + one.sentinel);
      b.stood_for = std::move(*stood);
    } else {
      say("warning: no credential stands in this call: " + stood.error().message());
    }
  }
  for (const auto& e : request.env) {
    const std::string name = e.substr(0, e.find('=') + 1);
    std::erase_if(*config.env, [&name](const std::string& have) { return have.starts_with(name); });
    config.env->push_back(e);
  }
  config.pass_stdin = request.pass_stdin;
  config.stdio = request.stdio;
  if (request.helper_inside) {
    auto helper = companion("chock-helper");
    if (!helper) return std::move(helper).error();
    config.binds.push_back(Bind{*helper, kHelperInside, Access::read_only_file});
  }
  config.network = context.network;
  config.allow_jit = context.jit.decision == policy::Decision::allow;
  config.limits = call_limits(limits);
  b.deadline = set_deadline(request, limits, config);
  // The call starts where the caller named: the project's directory (which
  // may be below the repository's top), else the current one.
  if (auto r = workspace::add_to_config(s, context.start, config, mounter); !r) return std::move(r).error();
  auto cache = workspace::add_call_dirs(s, config);
  if (!cache) return std::move(cache).error();
  // Its last count is kept beside it, where no call writes: a call starts from that, not from a walk.
  config.directory_cap = DirectoryCap{*cache, limits.cache_bytes,
                                      "the project's toolchain cache (/run/chock/cache; .limits.cache sets "
                                      "its cap, `chock cache clear` empties it)",
                                      *cache + ".count"};
  add_host_parts(context, opened, config, events, say);
  // git grep inside a git workspace, through Chock's git, which preloads
  // PCRE2 without JIT into git alone. (The preload is built against the
  // host's libc: a Nix toolchain's git is not the host's.)
  if (!config.allow_jit && s.kind == workspace::Kind::git && !context.shell)
    if (auto r = add_pcre2_without_jit(config); !r) return std::move(r).error();
  if (config.allow_jit)
    say(std::string("warning: write-xor-execute is OFF for this call: sandbox.jit is allowed by ") +
        (context.jit.deciding_rule ? context.jit.deciding_rule->origin : std::string("the policy")) +
        "; every blocked call still kills, io_uring is still refused");
  return b;
}

Expected<DiskGuard> disk_guard(const std::string& dir, std::uint64_t cap) {
  struct statvfs v {};
  if (::statvfs(dir.c_str(), &v) != 0) return sys_error("statvfs, for the disk limit", dir);
  DiskGuard g =
      DiskGuard::for_file_system(dir, cap, static_cast<std::uint64_t>(v.f_blocks) * v.f_frsize, v.f_files);
  // Short of room while the trash (what removals let go, never work) still
  // holds files, as after a session removed a moment ago whose sweeper is
  // still deleting: the trash is emptied now, and the room counted again.
  // (A sweeper at work is waited for: what it freed counts too.)
  if (static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize < g.start_bytes() ||
      (g.floor_inodes > 0 && v.f_favail < g.start_inodes())) {
    (void)workspace::sweep_trash();  // a failure leaves the room as it is, and says so below
    if (::statvfs(dir.c_str(), &v) != 0) return sys_error("statvfs, for the disk limit", dir);
  }
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(v.f_bavail) * v.f_frsize;
  if (free_bytes < g.start_bytes())
    return Error{"the file system of " + dir + " has " + format_size(free_bytes / 4096 * 4096) +
                     " free, under the " + format_size(g.start_bytes()) +
                     " a call needs to start: make room there first (chock workspace prune)",
                 "", ENOSPC};
  if (g.floor_inodes > 0 && v.f_favail < g.start_inodes())
    return Error{"the file system of " + dir + " has " + std::to_string(v.f_favail) +
                     " free inodes, under the " + std::to_string(g.start_inodes()) +
                     " a call needs to start: make room there first (chock workspace prune)",
                 "", ENOSPC};
  return g;
}

namespace {

// A ZON string literal of `text` (a project's own .carry row may hold a quote).
std::string zon_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string uncarried_line(const std::vector<std::string>& uncarried, const config::ProjectFile& project) {
  std::string names, flags, row;
  for (const auto& name : uncarried) {
    names += (names.empty()                                        ? ""
              : uncarried.size() > 1 && &name == &uncarried.back() ? " and "
                                                                   : ", ") +
             name;
    flags += " --carry " + name;
  }
  // The row as it should read: the project's own directories, then these.
  for (const auto& c : project.carry) row += (row.empty() ? "" : ", ") + zon_string(c);
  for (const auto& name : uncarried) row += (row.empty() ? "" : ", ") + zon_string(name);
  const bool one = uncarried.size() == 1;
  const std::string it = one ? "it" : "them";
  const std::string zon_row = ".carry = .{ " + row + " }";
  return names + (one ? " is" : " are") + " in the project and ignored by git, so this git workspace lacks " +
         it + " and a program that needs " + it +
         " fails (\"mocha: not found\", \"Cannot find module\", \"No module named\"); to carry " + it +
         " in copy-on-write, " +
         (project.carry.empty() ? "add " + zon_row + " to chock.zon"
                                : "make chock.zon's .carry row " + zon_row) +
         " (or run with" + flags + ")";
}

}  // namespace chock::session
