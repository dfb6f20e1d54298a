// chock memory list | read NAME [--version N] | write NAME --kind K --description TEXT
//   [--project DIR] [--session ID]: the project's knowledgebase.
//
// The notes are read and written by a sandboxed call of a fixed program (this
// binary, bound read-only at /run/chock/bin/chock, run as `chock memory-tool`),
// the only call the knowledgebase is mounted in (/run/chock/memory). The host
// side checks the request, asks memory.write of the policy, and reads the
// tool's JSON answer.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "chock/sandbox.hpp"
#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/fetch_hop.hpp"
#include "cli/layer_flags.hpp"
#include "log/session_log.hpp"
#include "session/net_rules.hpp"
#include "tools/memory_store.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/io.hpp"
#include "util/json.hpp"
#include "util/passwd.hpp"

namespace chock::cli {

namespace {

using tools::kMemoryInside;

struct MemoryOptions {
  std::string project;
  std::string session;
  std::string name;
  std::optional<int> version;
  std::string kind;
  std::string description;
  config::LayerOptions layers;
  bool json = false;  // list: docs/schemas/memory-list.schema.json
};

int fail(const Error& e) {
  std::fprintf(stderr, "chock: memory: %s\n", printable(e.message()).c_str());
  return exit_status_for(e, 2);
}

// The project's knowledgebase on the host, made for the uid its tool runs as.
Expected<std::string> memory_dir(const std::string& project, uid_t call_uid) {
  auto data = workspace::data_dir();
  if (!data) return data;
  const std::string root = *data + "/memory", dir = root + "/" + log::project_key(project);
  if (auto r = fs::make_dirs(root, 0700); !r) return std::move(r).error();
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::geteuid() == 0 && ::lchown(dir.c_str(), call_uid, group_of(call_uid)) != 0)
      return sys_error("chown", dir);
  } else if (errno != EEXIST) {
    return sys_error("mkdir", dir);
  }
  return dir;
}

// Runs the memory tool in its own call; its one JSON answer.
Expected<nlohmann::json> run_tool(const std::string& dir, const std::vector<std::string>& args,
                                  const std::string& input) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return sys_error("memory: pipe");
  UniqueFd in_read(in[0]), in_write(in[1]), out_read(out[0]), out_write(out[1]);
  // At most a note's 16 KiB: far below a pipe's capacity.
  if (auto w = write_all(in_write.get(), input, "the memory tool's stdin"); !w) return std::move(w).error();
  in_write.reset();
  Config c = tools::memory_call(dir_of_self() + "/chock", dir, args);
  c.pass_stdin = true;
  c.stdio = {in_read.get(), out_write.get(), 2};
  auto child = spawn(c);
  if (!child) return std::move(child).error();
  in_read.reset();
  out_write.reset();
  std::string answer;
  char buf[65536];
  for (ssize_t n; (n = ::read(out_read.get(), buf, sizeof buf)) > 0;)
    answer.append(buf, static_cast<std::size_t>(n));
  const Result r = child->wait();
  auto j = parse_json(answer);
  if (!j && j.error().kind == Errc::hostile_content)
    return Error{"the memory tool's answer is " + j.error().what, ""};
  if (!j || !j->is_object()) {
    if (r.setup_failure)
      return Error{"the memory tool's sandbox failed at " + r.setup_failure->step, r.setup_failure->detail,
                   r.setup_failure->code};
    return Error{"the memory tool ended without an answer (status " + std::to_string(r.exit_status()) + ")",
                 ""};
  }
  if (j->contains("error")) return Error{j->value("error", std::string()), "", 0, Errc::bad_config};
  return j;
}

struct Target {
  std::string project;
  std::string session = "none";
  std::vector<std::string> always;
};

Expected<Target> target_of(const MemoryOptions& o) {
  Target t;
  if (!o.session.empty()) {
    auto s = workspace::load(o.session);
    if (!s) return std::move(s).error();
    t.project = s->project;
    t.session = s->id;
    t.always = s->always;
    return t;
  }
  auto root = workspace::project_root(o.project.empty() ? "." : o.project);
  if (!root) return std::move(root).error();
  t.project = *root;
  return t;
}

uid_t call_uid() {
  return ::geteuid() == 0 ? 65534 : ::geteuid();
}

int list(const MemoryOptions& o) {
  auto t = target_of(o);
  if (!t) return fail(t.error());
  auto dir = memory_dir(t->project, call_uid());
  if (!dir) return fail(dir.error());
  auto j = run_tool(*dir, {"list"}, "");
  if (!j) return fail(j.error());
  if (o.json) {
    // The tool's answer is the call's writing: only the documented fields, each of its type.
    nlohmann::json notes = nlohmann::json::array();
    for (const auto& n : (*j)["notes"])
      notes.push_back({{"name", n.value("name", "")},
                       {"kind", n.value("kind", "")},
                       {"version", n.value("version", 0)},
                       {"time", n.value("time", "")},
                       {"session", n.value("session", "")},
                       {"bytes", n.value("bytes", 0)},
                       {"description", n.value("description", "")}});
    std::printf("%s\n", notes.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return 0;
  }
  for (const auto& n : (*j)["notes"])
    std::printf("%-24s %-12s v%-3d %s  %s\n", n.value("name", "").c_str(), n.value("kind", "").c_str(),
                n.value("version", 0), n.value("time", "").c_str(),
                printable(n.value("description", "")).c_str());
  return 0;
}

int read(const MemoryOptions& o) {
  if (auto ok = tools::check_name(o.name); !ok) return fail(ok.error());
  auto t = target_of(o);
  if (!t) return fail(t.error());
  auto dir = memory_dir(t->project, call_uid());
  if (!dir) return fail(dir.error());
  std::vector<std::string> args{"read", o.name};
  if (o.version) args.push_back(std::to_string(*o.version));
  auto j = run_tool(*dir, args, "");
  if (!j) return fail(j.error());
  // The body is what a call wrote: on a terminal, its bytes are shown, never acted on.
  const std::string body = j->value("body", "");
  std::fprintf(stderr, "chock: %s (%s), version %d of %s, session %s: %s\n", o.name.c_str(),
               j->value("kind", "").c_str(), j->value("version", 0), j->value("time", "").c_str(),
               j->value("session", "").c_str(), printable(j->value("description", "")).c_str());
  const std::string shown = ::isatty(STDOUT_FILENO) == 1 ? printable(body) : body;
  std::fwrite(shown.data(), 1, shown.size(), stdout);
  return 0;
}

int write(const MemoryOptions& o) {
  for (const auto& ok :
       {tools::check_name(o.name), tools::check_kind(o.kind), tools::check_description(o.description)})
    if (!ok) return fail(ok.error());
  auto t = target_of(o);
  if (!t) return fail(t.error());
  config::LayerOptions layer_options = o.layers;
  layer_options.project_dir = t->project;
  auto layers = config::load_layers(layer_options);
  if (!layers) return fail(layers.error());
  session::NetRules rules(layers->table, t->always, t->session != "none", person_ask());
  const net::Ruling ruling =
      rules.ask(policy::kMemoryWrite, "write the note " + o.name + " to the knowledgebase");
  if (!ruling.allowed) {
    std::fprintf(stderr, "chock: memory: refused: %s\n", ruling.refusal.c_str());
    return 1;
  }
  if (!rules.new_always().empty()) remember_always(t->session, rules.new_always());
  // Read after the question: on a terminal the answer comes first, then the body.
  std::string body((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (body.size() > tools::kMaxNoteBytes)
    return fail(
        Error{"a note's version is at most 16 KiB; stdin held " + std::to_string(body.size()) + " bytes", "",
              0, Errc::bad_config});
  auto dir = memory_dir(t->project, call_uid());
  if (!dir) return fail(dir.error());
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  auto j = run_tool(*dir, {"write", o.name, o.kind, o.description, t->session, when}, body);
  if (!j) return fail(j.error());
  std::printf("chock: the note %s is at version %d\n", o.name.c_str(), j->value("version", 0));
  return 0;
}

// ---- inside the memory tool's call -----------------------------------------

int answer(const nlohmann::json& j, int status) {
  std::printf("%s\n", j.dump().c_str());
  return status;
}

int tool(const std::vector<std::string>& args) {
  auto error = [](const Error& e) { return answer({{"error", e.message()}}, 1); };
  if (args.empty()) return answer({{"error", "no operation"}}, 2);
  if (args[0] == "list") {
    auto notes = tools::list_notes(kMemoryInside);
    if (!notes) return error(notes.error());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& n : *notes)
      out.push_back({{"name", n.name},
                     {"kind", n.kind},
                     {"version", n.version},
                     {"time", n.time},
                     {"session", n.session},
                     {"bytes", n.body.size()},
                     {"description", n.description}});
    return answer({{"notes", out}}, 0);
  }
  if (args[0] == "read" && (args.size() == 2 || args.size() == 3)) {
    std::optional<int> version;
    if (args.size() == 3) version = std::atoi(args[2].c_str());
    auto n = tools::read_note(kMemoryInside, args[1], version);
    if (!n) return error(n.error());
    return answer({{"kind", n->kind},
                   {"version", n->version},
                   {"time", n->time},
                   {"session", n->session},
                   {"description", n->description},
                   {"body", n->body}},
                  0);
  }
  if (args[0] == "write" && args.size() == 6) {
    tools::Note n;
    n.name = args[1];
    n.kind = args[2];
    n.description = args[3];
    n.session = args[4];
    n.time = args[5];
    n.body.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    auto v = tools::write_note(kMemoryInside, n);
    if (!v) return error(v.error());
    return answer({{"version", *v}}, 0);
  }
  return answer({{"error", "unknown operation"}}, 2);
}

}  // namespace

void add_memory_command(Command app, Action& action) {
  auto o = std::make_shared<MemoryOptions>();
  Command cmd =
      app.add_subcommand("memory", "The project's knowledgebase: notes an agent keeps between sessions");
  cmd.require_subcommand(1);
  auto common = [o](Command sub) {
    sub.add_option("--project", o->project, "The project (default: the current directory)");
    sub.add_option("--session", o->session, "The session the note belongs to (and whose project it is)");
  };
  Command l = cmd.add_subcommand("list", "Every note's newest version");
  common(l);
  l.add_flag("--json", o->json, "Print the notes as JSON (docs/schemas/memory-list.schema.json)");
  l.callback([o, &action] { action = [o] { return list(*o); }; });
  Command r = cmd.add_subcommand("read", "A note's body on stdout, its header on stderr");
  common(r);
  r.add_option("name", o->name, "The note's name").required();
  r.add_option("--version", o->version, "An older version (default: the newest)")
      .check(Check::range(1, 1000));
  r.callback([o, &action] { action = [o] { return read(*o); }; });
  Command w =
      cmd.add_subcommand("write", "A new version of a note, its body from stdin (memory.write decides)");
  common(w);
  w.add_option("name", o->name, "The note's name: a-z, 0-9, '_' and '-', 1 to 64 bytes").required();
  w.add_option("--kind", o->kind, "insight, code_fact, convention, gotcha, dead_end or environment")
      .required();
  w.add_option("--description", o->description, "One line saying what the note is for").required();
  add_layer_flags(w, o->layers);
  w.callback([o, &action] { action = [o] { return write(*o); }; });
}

void add_memory_tool_command(Command app, Action& action) {
  auto args = std::make_shared<std::vector<std::string>>();
  Command cmd = app.add_subcommand("memory-tool", "");  // no description: not for people
  cmd.group("");
  cmd.add_option("args", *args);
  cmd.callback([args, &action] { action = [args] { return tool(*args); }; });
}

}  // namespace chock::cli
