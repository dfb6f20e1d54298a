// chock run [--project DIR] [--session ID | --keep] [--allow-dirty] [--deny PATH]... [--carry DIR]...
//           [--net none|host] [--timeout S] [--result FILE]
//           [--org-bundle PATH] [--policy-rule ACTION=DECISION]... -- CMD [ARG...]
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "chock/sandbox.hpp"
#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/device_grants.hpp"
#include "cli/fetch_hop.hpp"
#include "cli/jit_fallback.hpp"
#include "cli/json_capture.hpp"
#include "cli/layer_flags.hpp"
#include "cli/net_rules.hpp"
#include "cli/outcome.hpp"
#include "cli/path_check.hpp"
#include "cli/session_events.hpp"
#include "cli/sweeper.hpp"
#include "cli/tasks.hpp"
#include "cli/terminal.hpp"
#include "cli/toolchain_choice.hpp"
#include "log/session_log.hpp"
#include "sandbox/kill_naming.hpp"
#include "sandbox/overlay_holder.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/sha256.hpp"
#include "util/split.hpp"

namespace chock::cli {

namespace {

struct RunOptions {
  std::string project;
  std::string session;
  bool allow_dirty = false;
  bool keep = false;        // a new session stays even when its call leaves nothing
  bool background = false;  // a task: the call runs on, this returns its id
  std::vector<std::string> deny;
  std::vector<std::string> carry;
  std::string net;  // empty: the project's .network, else none
  double timeout_seconds = 0;
  std::string result_file;
  bool pass_stdin = false;
  std::string cwd;               // where the call starts, inside the project (default: as the caller is)
  std::vector<std::string> env;  // K=V added to the call's environment
  int program_stderr = -1;       // chock mcp: the program's stderr apart from Chock's own lines
  bool bind_chock = false;       // chock mcp: this binary at /run/chock/bin/chock, for the file tools
  bool plain_env = false;        // chock mcp wrap: PATH, LANG, TERM and Chock's own, nothing more
  bool host_toolchain = false;   // the host's /usr even where the project has a Nix dev shell
  bool json = false;             // the outputs captured, one JSON object on stdout (json_capture.hpp)
  config::LayerOptions layers;
  std::vector<std::string> argv;
};

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) != nullptr ? std::string(buf) : std::string("/");
}

// The call gets a small environment of its own: the caller's tokens and
// keys stay outside.
std::vector<std::string> call_environment() {
  std::vector<std::string> env;
  const char* path = std::getenv("PATH");
  env.push_back(std::string("PATH=") + (path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin"));
  // The sanitizers' options are a developer's settings, not secrets.
  for (const char* name : {"TERM", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "NO_COLOR", "ASAN_OPTIONS",
                           "UBSAN_OPTIONS", "TSAN_OPTIONS", "LSAN_OPTIONS", "MSAN_OPTIONS"})
    if (const char* v = std::getenv(name)) env.push_back(std::string(name) + "=" + v);
  env.emplace_back("HOME=/tmp");
  env.emplace_back("TMPDIR=/tmp");
  return env;
}

// --cwd: a directory of the project, relative to its top or absolute below
// it; only its name is checked here (the call's own tree decides the rest).
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

// "chock: checking out 1a2b3c4d5e6f: 9000 of 20000 files", rewritten in place.
void report_progress(const std::string& what, std::uint64_t done, std::uint64_t total) {
  std::fprintf(stderr, "\rchock: %s: %llu of %llu files%s", printable(what).c_str(),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
               done == total ? "\n" : "");
}

// The PATH the call gets.
std::string path_of(const Config& config) {
  for (const auto& e : *config.env)
    if (e.starts_with("PATH=")) return e.substr(5);
  return {};
}

Expected<Network> choose_network(const RunOptions& o, const config::Layers& layers) {
  if (o.net == "host") return Network::host;
  if (o.net == "none") return Network::none;
  if (o.net == "filtered") return Network::filtered;
  return layers.project.network.value_or(Network::none);
}

nlohmann::json rule_json(const policy::Answer& answer) {
  nlohmann::json j = {{"decision", policy::decision_name(answer.decision)},
                      {"layer", policy::layer_name(answer.deciding_layer)}};
  j["rule"] = answer.deciding_rule ? nlohmann::json(answer.deciding_rule->origin) : nlohmann::json(nullptr);
  return j;
}

using Events = SessionEvents;

// The disk guard of a call whose workspace is in `dir`: what it may write
// (.limits.disk) and the floors its file system keeps. Under the room a
// call needs to start, it is refused.
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

// The end of a session of one call: removed when it left nothing to keep,
// else kept with a line that says what it holds and how to get it back.
void end_one_call(const workspace::Session& s) {
  auto end = workspace::remove_if_empty(s.id);
  if (!end) {
    std::fprintf(stderr, "chock: session %s kept: %s\n", s.id.c_str(),
                 printable(end.error().message()).c_str());
    return;
  }
  if (end->removed) {
    start_sweeper();
    if (auto log = log::SessionLog::open(s.project, s.id); log)
      (void)log->append(log::event::kSessionEnd, {{"removed", true}, {"reason", "nothing to keep"}});
    std::fprintf(stderr, "chock: session %s removed: its call left %s (--keep keeps a session)\n",
                 s.id.c_str(), s.kind == workspace::Kind::git ? "no commit" : "no change");
    return;
  }
  if (!end->problem.empty()) {
    std::fprintf(stderr, "chock: session %s kept: %s\n", s.id.c_str(), printable(end->problem).c_str());
  } else if (s.kind == workspace::Kind::git) {
    std::fprintf(stderr,
                 "chock: session %s kept: %llu commit(s) not applied; `chock apply %s` applies those of its "
                 "HEAD, --session %s continues it\n",
                 s.id.c_str(), static_cast<unsigned long long>(end->pending), s.id.c_str(), s.id.c_str());
  } else {
    std::fprintf(stderr,
                 "chock: session %s kept: %llu changed path(s); `chock workspace adopt %s` copies them out, "
                 "--session %s continues it\n",
                 s.id.c_str(), static_cast<unsigned long long>(end->pending), s.id.c_str(), s.id.c_str());
  }
}

// The call's limits, as its Config has them.
Limits call_limits(const config::EffectiveLimits& limits) {
  Limits l;
  l.processes = limits.processes;
  l.memory_bytes = limits.memory_bytes;
  return l;
}

int call_in_session(const RunOptions& o, const config::Layers& layers, workspace::Opened& opened,
                    const std::string& start, Network network, const policy::Answer& jit,
                    const std::optional<toolchain::DevShell>& shell, std::optional<Begun> begun,
                    JsonCapture* json);

int run_call(const RunOptions& o, JsonCapture* json);

int run(const RunOptions& o) {
  if (!o.json) return run_call(o, nullptr);
  auto capture = JsonCapture::start();
  if (!capture) return refuse(capture.error(), o.result_file);
  return (*capture)->finish(run_call(o, capture->get()));
}

int run_call(const RunOptions& o, JsonCapture* json) {
  std::string start = current_dir();
  if (char real[PATH_MAX]; !o.project.empty() && ::realpath(o.project.c_str(), real) != nullptr) start = real;
  auto root = workspace::project_root(o.project.empty() ? start : o.project);
  if (!root) return refuse(root.error(), o.result_file);
  if (!o.cwd.empty()) {
    auto inside = start_inside(*root, o.cwd);
    if (!inside) return refuse(inside.error(), o.result_file);
    start = *inside;
  }
  config::LayerOptions layer_options = o.layers;
  layer_options.project_dir = *root;
  auto layers = config::load_layers(layer_options);
  if (!layers) return refuse(layers.error(), o.result_file);
  auto network = choose_network(o, *layers);
  if (!network) return refuse(network.error(), o.result_file);
  // sandbox.jit is read before the call starts: nobody is asked, so only allow relaxes.
  policy::Answer jit = layers->table.decide(policy::kSandboxJit);
  // The sandbox begins now, while the session is opened: who the call runs
  // as, its network and its limits are known already (a root caller's
  // session runs as the default uid unless it says otherwise; spawn begins
  // anew where the session's Config differs). A task's runner spawns its own.
  std::optional<Begun> begun;
  if (!o.background) {
    Config early;
    early.network = *network;
    early.limits = call_limits(layers->limits());
    if (::geteuid() == 0) early.user = workspace::kDefaultRunUid;
    if (auto b = begin(early)) begun = std::move(*b);  // else spawn begins it and says what failed
  }
  // Asked of Nix before any session is made: a shell that does not evaluate runs nothing.
  auto shell = choose_toolchain(*root, o.host_toolchain);
  if (!shell) return refuse(shell.error(), o.result_file);
  if (*shell && !(*shell)->from_cache)
    std::fprintf(stderr, "chock: %s\n", printable(toolchain_line(**shell)).c_str());

  workspace::OpenOptions open;
  open.project = *root;
  open.project_is_root = true;
  open.session = o.session;
  open.allow_dirty = o.allow_dirty;
  open.link_base_index = layers->operator_file.link_base_index;
  open.last_run = static_cast<std::int64_t>(std::time(nullptr));
  open.deny = o.deny;
  for (const auto& path : layers->deny_read())
    if (std::find(open.deny.begin(), open.deny.end(), path) == open.deny.end()) open.deny.push_back(path);
  // Long steps say where they are, on a terminal only.
  if (::isatty(STDERR_FILENO) != 0) open.progress = report_progress;
  // From how long a step reports; tests set 0 rather than depend on the disk's speed.
  if (const char* after = std::getenv("CHOCK_PROGRESS_AFTER_MS"); after != nullptr && *after != '\0')
    open.progress_after_ms = static_cast<std::uint32_t>(std::strtoul(after, nullptr, 10));
  open.carry = layers->project.carry;
  for (const auto& path : o.carry)
    if (std::find(open.carry.begin(), open.carry.end(), path) == open.carry.end()) open.carry.push_back(path);
  auto opened = workspace::open(open);
  if (!opened) return refuse(opened.error(), o.result_file);
  if (json != nullptr) json->set_session(opened->session.id);
  const int status =
      call_in_session(o, *layers, *opened, start, *network, jit, *shell, std::move(begun), json);
  if (opened->created && !o.keep && !o.background) {
    const workspace::Session s = opened->session;
    opened->lock = workspace::SessionLock();  // the removal takes it again
    end_one_call(s);
  }
  return status;
}

int call_in_session(const RunOptions& o, const config::Layers& layers, workspace::Opened& opened,
                    const std::string& start, Network network, const policy::Answer& jit,
                    const std::optional<toolchain::DevShell>& shell, std::optional<Begun> begun,
                    JsonCapture* json) {
  workspace::Session& s = opened.session;
  for (const auto& note : opened.notes) std::fprintf(stderr, "chock: %s\n", printable(note).c_str());
  config::EffectiveLimits limits = layers.limits();
  Events events(s.project, s.id);
  // Written while the sandbox starts (while_entering below), in the room the last call reserved.
  events.hold();
  if (opened.created) {
    const std::string lasts = o.keep || o.background
                                  ? "continue it with --session " + s.id
                                  : std::string("a session of one call: kept only if it leaves work");
    std::fprintf(stderr, "chock: session %s (%s workspace of %s); %s\n", s.id.c_str(),
                 s.kind == workspace::Kind::git ? "git worktree" : "overlay", printable(s.project).c_str(),
                 lasts.c_str());
    // Said once, when the session is made: the ceiling holds on every call.
    for (const auto& notice : limits.notices) std::fprintf(stderr, "chock: %s\n", notice.c_str());
    events.add("session.start", {{"project", s.project}, {"kind", workspace::kind_name(s.kind)}});
  }
  nlohmann::json cli_rules = nlohmann::json::array();
  for (const auto& r : layers.command_line) cli_rules.push_back(r.origin);
  events.add("session.config",
             {{"chock_zon", layers.project.path.empty() ? nlohmann::json(nullptr)
                                                        : nlohmann::json(sha256_hex(layers.project.bytes))},
              {"allow_dirty", o.allow_dirty},
              {"policy_rules", cli_rules},
              {"limit_notices", limits.notices}});
  events.add("workspace.open", {{"kind", workspace::kind_name(s.kind)},
                                {"created", opened.created},
                                {"base", s.base},
                                {"deny", s.deny}});

  Config config;
  config.argv = o.argv;
  config.env = call_environment();
  if (o.plain_env)
    std::erase_if(*config.env, [](const std::string& e) {
      return !e.starts_with("PATH=") && !e.starts_with("LANG=") && !e.starts_with("TERM=") &&
             !e.starts_with("HOME=") && !e.starts_with("TMPDIR=");
    });
  if (shell) use_dev_shell(*shell, config);
  for (const auto& e : o.env) {
    const std::string name = e.substr(0, e.find('=') + 1);
    std::erase_if(*config.env, [&name](const std::string& have) { return have.starts_with(name); });
    config.env->push_back(e);
  }
  config.pass_stdin = o.pass_stdin;
  if (o.program_stderr >= 0) config.stdio[2] = o.program_stderr;
  if (json != nullptr) config.stdio = {0, json->program_stdout(), json->program_stderr()};
  if (o.bind_chock)
    config.binds.push_back(
        Bind{dir_of_self() + "/chock", std::string(kConnectDirInside) + "/chock", Access::read_only_file});
  config.network = network;
  config.allow_jit = jit.decision == policy::Decision::allow;
  config.limits = call_limits(limits);
  // No call runs forever: --timeout, else the layers' deadline (30 min unless lowered).
  std::string deadline;
  if (o.timeout_seconds > 0) {
    config.timeout = std::chrono::milliseconds(static_cast<long long>(o.timeout_seconds * 1000));
    deadline = seconds_text(o.timeout_seconds) + " (--timeout)";
  } else {
    config.timeout = std::chrono::seconds(limits.timeout_seconds);
    deadline = seconds_text(static_cast<double>(limits.timeout_seconds)) +
               (limits.timeout_seconds == config::kDefaultTimeoutSeconds
                    ? " (Chock's default; .limits.timeout in chock.zon lowers it, --timeout sets it)"
                    : " (.limits.timeout)");
  }
  // The call starts where the caller named: --project's directory (which may
  // be below the repository's top), else the current one.
  // A session that outlives this call keeps its overlay mounted for the next.
  const auto mounter = o.background                ? workspace::Mounter::task
                       : opened.created && !o.keep ? workspace::Mounter::call
                                                   : workspace::Mounter::kept_call;
  if (auto r = workspace::add_to_config(s, start, config, mounter); !r)
    return refuse(r.error(), o.result_file);
  auto cache = workspace::add_call_dirs(s, config);
  if (!cache) return refuse(cache.error(), o.result_file);
  // Its last count is kept beside it, where no call writes: a call starts from that, not from a walk.
  config.directory_cap = DirectoryCap{*cache, limits.cache_bytes,
                                      "the project's toolchain cache (/run/chock/cache; .limits.cache sets "
                                      "its cap, `chock cache clear` empties it)",
                                      *cache + ".count"};
  // Devices the project names and the policy allows, found anew for each call.
  const DeviceGrants devices = grant_devices(layers, ::geteuid() == 0);
  config.devices = devices.nodes;
  for (const auto& line : devices.lines) std::fprintf(stderr, "chock: %s\n", printable(line).c_str());
  for (const auto& e : devices.exposed) events.add("device.exposed", e);
  // The operator's own toolchains (~/.cargo, ~/.pyenv), read-only at their own paths.
  for (const auto& dir : layers.operator_file.toolchain_paths)
    config.binds.push_back(Bind{dir, dir, Access::read_only});
  const PathReport path = check_path(path_of(config), config);
  if (opened.created && !path.absent.empty()) {
    std::string list;
    for (const auto& e : path.absent) list += (list.empty() ? "" : ", ") + e;
    std::fprintf(stderr,
                 "chock: PATH entries the sandbox does not have: %s (an operator binds toolchains with "
                 ".toolchain_paths in ~/.config/chock/config.zon)\n",
                 printable(list).c_str());
  }
  if (!path.command_line.empty()) std::fprintf(stderr, "chock: %s\n", printable(path.command_line).c_str());
  // git grep inside a git workspace; a preload costs every exec some 80 us, so only there.
  // (The preload is built against the host's libc: a Nix toolchain's git is not the host's.)
  if (!config.allow_jit && s.kind == workspace::Kind::git && !shell) add_pcre2_without_jit(config);
  if (config.allow_jit)
    std::fprintf(
        stderr,
        "chock: warning: write-xor-execute is OFF for this call: sandbox.jit is allowed by %s; every "
        "blocked call still kills, io_uring is still refused\n",
        jit.deciding_rule ? jit.deciding_rule->origin.c_str() : "the policy");
  events.add("sandbox.open", {{"write_execute", config.allow_jit ? "relaxed" : "strict"},
                              {"sandbox_jit", rule_json(jit)},
                              {"network", network_name(config.network)},
                              {"toolchain", toolchain_json(shell)}});

  events.add("tool.call", {{"argv", config.argv},
                           {"cwd", config.cwd},
                           {"timeout_ms", config.timeout ? config.timeout->count() : 0}});
  auto guard = disk_guard(s.dir, limits.disk_bytes);
  if (!guard) return refuse(guard.error(), o.result_file);
  config.disk = std::move(*guard);
  events.reserve(64ULL * 1024);
  // A filtered call's names and connections are judged by the policy table,
  // asked at this terminal, and recorded in the session log as they happen.
  NetRules net_rules(layers.table, s.always, true);
  if (config.network == Network::filtered) {
    net::JudgeOptions judge_options;
    judge_options.allowed_private = private_ranges(layers.operator_file);
    judge_options.record = [&events](std::string_view event, const nlohmann::json& fields) {
      events.add(event, fields);
    };
    config.judge = call_judge(net_rules, std::move(judge_options));
    add_connect_client(config);
  }
  // As late as can be: the last call's teardown goes on meanwhile.
  auto mounts = workspace::hold_mounts(s);
  if (!mounts) return refuse(mounts.error(), o.result_file);
  // The overlays the last call left mounted (the session's tree, its admin
  // dir), until spawn has attached them; the work directories they still use.
  // One holder, in the session's directory, keeps them all.
  std::vector<UniqueFd> held;
  std::vector<std::string> held_work;
  std::vector<Overlay*> kept;
  for (auto& overlay : config.overlays)
    if (!overlay.hold_dir.empty()) kept.push_back(&overlay);
  if (!kept.empty() && kept.front()->hold_idle.count() == 0) {
    sandbox::release_held_overlay(kept.front()->hold_dir);  // none beside this call's own
  } else if (!kept.empty()) {
    const std::string& dir = kept.front()->hold_dir;
    held = sandbox::take_held_overlays(dir, sandbox::hold_key(config.overlays, dir), kept.size());
    for (std::size_t i = 0; i < held.size(); ++i) {
      kept[i]->held = held[i].get();
      held_work.push_back(kept[i]->work);
    }
  }
  if (!o.background) workspace::set_aside_work(s, held_work);
  if (o.background) {
    // A task runs beside the session's later calls: it waits for the last
    // call's teardown, and holds nothing for its own.
    *mounts = workspace::SessionLock();
    events.release();
    auto task = start_task(s, std::move(config), opened.lock, events);
    if (!task) return refuse(task.error(), o.result_file);
    std::printf("%s\n", task->c_str());
    std::fprintf(stderr,
                 "chock: task %s started; `chock tasks wait %s` waits for it, its calls read it at "
                 "/run/chock/tasks\n",
                 task->c_str(), task->c_str());
    return 0;
  }
  auto terminal = json != nullptr ? Expected<TerminalRelay>(TerminalRelay()) : TerminalRelay::prepare(config);
  if (!terminal) return refuse(terminal.error(), o.result_file);
  CancelSignals cancel;
  config.while_entering = [&events] { events.release(); };
  auto child = begun ? spawn(config, std::move(*begun)) : spawn(config);
  if (!child) {
    events.release();
    events.add("tool.result", {{"refused", child.error().message()}});
    return refuse(child.error(), o.result_file);
  }
  child->hand_teardown_to(mounts->fd());  // the next call waits for its teardown, this one need not
  terminal->start();
  workspace::remove_set_aside_work(s);  // while the program starts
  Result r = child->wait(cancel.fd());
  terminal->finish();  // the program's last output before chock's own line
  if (config.judge) {
    events.add("network.summary", config.judge->summary());
    // Kept in session.json while this call still holds the session's lock.
    if (!net_rules.new_always().empty()) {
      for (const auto& a : net_rules.new_always())
        if (std::find(s.always.begin(), s.always.end(), a) == s.always.end()) s.always.push_back(a);
      if (auto saved = workspace::save(s); !saved)
        std::fprintf(stderr, "chock: warning: could not keep the answer: %s\n",
                     saved.error().message().c_str());
    }
  }
  const nlohmann::json result = r.json();
  events.add("tool.result", result);
  if (json != nullptr) json->set_result(result.dump());
  return finish(r, config.argv, o.result_file, deadline);
}

}  // namespace

void add_run_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run one tool call in the project's workspace (a throwaway copy)");
  cmd->add_option("--project", o->project, "The project (default: the current directory)");
  cmd->add_option("--session", o->session, "Run in this session's workspace (default: a new session)");
  cmd->add_flag("--allow-dirty", o->allow_dirty, "Carry uncommitted work into a new git workspace");
  CLI::Option* session_option = cmd->get_option("--session");
  cmd->add_flag("--keep", o->keep,
                "Keep the new session for more calls even if this call leaves nothing (default: a session "
                "of one call, removed when it leaves no commit or change)")
      ->excludes(session_option);
  cmd->add_option("--deny", o->deny, "A project file to cover with the deny notice (repeatable)")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--carry", o->carry,
                  "An ignored directory of the project (node_modules, .venv) the git workspace shows "
                  "copy-on-write (repeatable; adds to chock.zon's .carry)")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--net", o->net,
                  "Network: none, filtered (names the policy allows, through Chock's relay) or host "
                  "(default: the project's .network, else none)")
      ->check(CLI::IsMember({"none", "filtered", "host"}));
  cmd->add_flag("--background", o->background,
                "Start the call as a task of the session and print its id at once (`chock tasks`); a new "
                "session is kept");
  cmd->add_option("--timeout", o->timeout_seconds, "Seconds before the call is ended")
      ->check(kPositiveSeconds);
  cmd->add_option("--result", o->result_file, "Write the result as JSON to this file");
  cmd->add_flag("--stdin", o->pass_stdin, "Pass the caller's stdin to the command (otherwise /dev/null)");
  cmd->add_flag("--json", o->json,
                "Capture the command's stdout and stderr and Chock's own lines, and print one JSON object "
                "(docs/schemas/run.schema.json)")
      ->excludes(cmd->get_option("--background"));
  cmd->add_option("--cwd", o->cwd,
                  "Start the command in this directory of the project (default: the current one)");
  cmd->add_option("--env", o->env, "Set K=V in the call's environment (repeatable)")
      ->type_size(1)
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->check([](const std::string& e) {
        return e.find('=') == std::string::npos || e.front() == '=' ? std::string("expected K=V")
                                                                    : std::string();
      });
  // chock mcp's own: not for people.
  cmd->add_option("--program-stderr", o->program_stderr)->group("");
  cmd->add_flag("--bind-chock", o->bind_chock)->group("");
  cmd->add_flag("--plain-env", o->plain_env)->group("");
  cmd->add_flag("--host-toolchain", o->host_toolchain,
                "The host's /usr, /bin and /lib even where the project has a Nix dev shell");
  add_layer_flags(*cmd, o->layers);
  cmd->add_option("command", o->argv, "The command, after --")->required();
  cmd->positionals_at_end();
  cmd->callback([o, &action] { action = [o] { return run(*o); }; });
}

}  // namespace chock::cli
