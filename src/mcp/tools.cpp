// The tools of `chock mcp` (server_impl.hpp): each a sandboxed call of the
// session engine in the server's own process, or (memory, fetch, apply) a
// `chock` command of its own.
#include <algorithm>
#include <cstring>

#include "chock/workspace.hpp"
#include "mcp/self_call.hpp"
#include "mcp/server_impl.hpp"
#include "session/tasks.hpp"
#include "util/escape.hpp"
#include "util/json.hpp"
#include "util/split.hpp"

namespace chock::mcp {

namespace {

constexpr std::size_t kOutputCap = 100U << 10;    // of run_command's stdout and stderr, each
constexpr std::size_t kFileAnswerCap = 4U << 20;  // a file tool's JSON answer
constexpr auto kToolDeadline = std::chrono::seconds(120);

Json text(const std::string& t) {
  return Json{{"type", "text"}, {"text", t}};
}

Json tool_result(Json content, bool is_error, Json structured = nullptr) {
  Json r{{"content", std::move(content)}, {"isError", is_error}};
  if (!structured.is_null()) r["structuredContent"] = std::move(structured);
  return r;
}

Json tool_error(const std::string& why) {
  return tool_result(Json::array({text(why)}), true);
}

std::string with_cut(const std::string& head, std::uint64_t cut) {
  if (cut == 0) return head;
  return head + "\n[" + std::to_string(cut) + " more bytes not shown]";
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// Chock's own lines of a command's stderr, without progress rewrites.
std::vector<std::string> chock_lines(const Captured& err) {
  return output_lines(err.head);
}

// "SIGKILL", as a result's JSON names a signal.
std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : std::to_string(sig);
}

// The last non-empty line of what a program wrote, for progress.
std::string last_line_of(std::string_view bytes) {
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) bytes.remove_suffix(1);
  const auto cut = bytes.find_last_of("\r\n");
  if (cut != std::string_view::npos) bytes.remove_prefix(cut + 1);
  return std::string(bytes.substr(0, 200));
}

}  // namespace

session::Hooks::Ask Server::person_ask(Flight& flight) {
  if (!client_can("elicitation")) return nullptr;
  const std::string during =
      "the tool call " + printable(flight.tool) + " (request " + flight.id.dump() + ")";
  return [this, &flight, during](const std::string& action, const std::string& what, bool offer_always,
                                 int cancel_fd) {
    return ask_person(outgoing_, {action, what, during, offer_always}, cancel_fd,
                      [&flight] { return flight.cancelled.load(); });
  };
}

Expected<Server::Ran> Server::run_in_session(session::Request request, Flight& flight, std::size_t cap) {
  request.project = project();
  request.org_bundle = o_.layers.org_bundle;
  request.policy_rules = o_.layers.policy_rules;
  {
    // The first call makes the session; a call beside it waits until it is made.
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [this] { return !session_.empty() || !making_session_; });
    request.session = session_;
    if (session_.empty()) {
      making_session_ = true;
      request.keep = true;
      request.allow_dirty = o_.allow_dirty;
    }
  }
  const bool making = request.session.empty();
  auto ran = std::make_shared<Ran>();
  ran->out.cap = cap;
  ran->err.cap = cap;
  std::mutex captured;
  session::Hooks hooks;
  hooks.say = [&](const std::string& line) {
    {
      std::lock_guard g(captured);
      ran->lines.push_back(line);
    }
    log(line);
  };
  hooks.output = [&](int stream, std::string_view bytes) {
    {
      std::lock_guard g(captured);
      (stream == 1 ? ran->out : ran->err).add(bytes);
    }
    if (const std::string last = last_line_of(bytes); !last.empty()) {
      std::lock_guard g(flight.mutex);
      flight.last_line = last;
    }
  };
  hooks.opened = [this](const std::string& id, bool) {
    std::lock_guard lock(mutex_);
    if (session_.empty()) session_ = id;
    making_session_ = false;
    changed_.notify_all();
  };
  hooks.ask = person_ask(flight);
  const bool background = request.background;
  session::Call call(std::move(request), std::move(hooks));
  if (!background)
    if (std::optional<Begun> prepared = take_prepared()) call.use(std::move(*prepared));
  {
    std::lock_guard g(flight.mutex);
    flight.call = &call;
  }
  if (flight.cancelled.load()) call.cancel();
  {
    std::lock_guard lock(mutex_);
    if (ending_) call.cancel();  // the client went away before this call could be reached
  }
  auto outcome = call.wait();
  {
    std::lock_guard g(flight.mutex);
    flight.call = nullptr;
  }
  if (making) {
    std::lock_guard lock(mutex_);
    making_session_ = false;
    changed_.notify_all();
  }
  call_ended();  // the next call's sandbox is begun meanwhile
  if (!outcome) return std::move(outcome).error();
  ran->outcome = std::move(*outcome);
  return std::move(*ran);
}

Json Server::call_tool(const std::string& name, const Json& args, Flight& flight) {
  if (name == "run_command") return run_command(args, flight);
  if (name == "task_output") return task_output(args);
  if (name == "read_memory") return read_memory(args);
  if (name == "write_memory") return write_memory(args, flight);
  if (name == "fetch_url") return fetch_url(args, flight);
  if (name == "workspace_status") return workspace_status(flight);
  if (name == "apply") return apply(args, flight);
  return file_call(name, args, flight);
}

// The arguments of each tool were checked against its inputSchema (schema.hpp) before it runs.
Json Server::run_command(const Json& args, Flight& flight) {
  session::Request r;
  for (const auto& a : args["argv"]) r.argv.push_back(a);
  r.cwd = args.value("cwd", std::string());
  if (const auto t = args.find("timeout_s"); t != args.end()) {
    // At most a year: past that a deadline is none, and the milliseconds would overflow.
    const double seconds = std::min(t->get<double>(), 365.0 * 24 * 3600);
    r.timeout = std::chrono::milliseconds(std::max(1LL, static_cast<long long>(seconds * 1000)));
  }
  r.background = args.value("background", false);
  for (const auto& spec : args.value("publish", Json::array())) r.publish.push_back(spec.get<std::string>());
  auto ran = run_in_session(std::move(r), flight, kOutputCap);
  if (!ran) return tool_error(ran.error().message());
  const session::Outcome& o = ran->outcome;
  if (!o.task.empty()) {
    std::string said = "task " + o.task + " started; task_output {\"id\": \"" + o.task + "\"} reads it";
    for (const auto& url : o.published) said += "\npublished at " + url + " while it runs";
    return tool_result(Json::array({text(said)}), false,
                       {{"task", o.task}, {"session", o.session}, {"published", o.published}});
  }
  const Result& result = *o.result;
  Json structured{{"stdout", ran->out.head},
                  {"stderr", ran->err.head},
                  {"stdout_bytes_cut", ran->out.cut()},
                  {"stderr_bytes_cut", ran->err.cut()},
                  {"chock", ran->lines},
                  {"session", o.session},
                  {"exit_code", result.exit_code ? Json(*result.exit_code) : Json()},
                  {"signal", result.signal ? Json(signal_name(*result.signal)) : Json()},
                  {"timed_out", result.timed_out}};
  Json content = Json::array();
  content.push_back(text(with_cut(ran->out.head, ran->out.cut())));
  if (ran->err.total > 0) content.push_back(text("stderr:\n" + with_cut(ran->err.head, ran->err.cut())));
  if (!ran->lines.empty()) content.push_back(text("Chock:\n" + joined(ran->lines)));
  content.push_back(text(structured["signal"].is_string()
                             ? "killed by " + structured["signal"].get<std::string>()
                             : "exit code " + std::to_string(result.exit_status())));
  return tool_result(content, result.exit_status() != 0, structured);
}

Json Server::task_output(const Json& args) {
  auto t = session::find_task(args["id"].get<std::string>());
  if (!t) return tool_error(t.error().message());
  if (t->state.value("state", "") == "running" && !session::task_running(*t))
    t->state["state"] = "ended without its record";
  auto out = session::task_output(*t);
  const std::string shown = out ? *out : std::string();
  return tool_result(Json::array({text(session::task_line(t->state) + "\n"), text(shown)}), false,
                     {{"task", t->id},
                      {"session", t->id.substr(0, t->id.rfind('-'))},
                      {"state", t->state.value("state", "")},
                      {"output", shown}});
}

Json Server::file_call(const std::string& name, const Json& args, Flight& flight) {
  static const std::pair<const char*, const char*> kOps[] = {
      {"read_file", "read"},      {"write_file", "write"}, {"edit_file", "edit"},
      {"list_directory", "list"}, {"glob", "glob"},        {"grep", "grep"}};
  Json request = args;
  for (const auto& [tool, op] : kOps)
    if (name == tool) request["op"] = op;
  // Chock's own program runs on the host's toolchain, whatever the project's is.
  session::Request r;
  r.argv = {"/run/chock/bin/chock-helper", "file-tool"};
  r.helper_inside = true;
  r.host_toolchain = true;
  r.timeout = kToolDeadline;
  r.input = request.dump(-1, ' ', false, Json::error_handler_t::replace);
  auto ran = run_in_session(std::move(r), flight, kFileAnswerCap);
  if (!ran) return tool_error(ran.error().message());
  auto parsed = parse_json(ran->out.head);
  Json answer = parsed ? std::move(*parsed) : Json();
  if (!answer.is_object())
    return tool_error("the file tool's call gave no answer:\n" + joined(ran->lines) + ran->err.head);
  if (answer.contains("error")) return tool_error(answer.value("error", ""));
  std::string shown;
  if (name == "read_file") {
    shown = answer.value("content", "");
    if (answer.value("truncated", false))
      shown += "\n[lines " + std::to_string(answer.value("first_line", 1)) + " to " +
               std::to_string(answer.value("first_line", 1) + answer.value("lines", 0) - 1) + " of " +
               std::to_string(answer.value("total_lines", 0)) + "; offset and limit read more]";
  } else if (name == "write_file" || name == "edit_file") {
    shown = "wrote " + std::to_string(answer.value("bytes", 0)) + " bytes to " + args.value("path", "");
  } else if (name == "list_directory") {
    for (const auto& e : answer["entries"])
      shown += e.value("name", "") + (e.value("type", "") == "directory" ? "/" : "") + "\n";
  } else {
    for (const auto& p : answer[name == "glob" ? "paths" : "matches"]) shown += p.get<std::string>() + "\n";
    if (shown.empty()) shown = name == "glob" ? "no path matches" : "no line matches";
  }
  if (answer.value("truncated", false) && name != "read_file") shown += "[more not shown]\n";
  answer["session"] = ran->outcome.session;
  return tool_result(Json::array({text(shown)}), false, answer);
}

Json Server::workspace_status(Flight& flight) {
  const std::string id = session();
  if (id.empty())
    return tool_result(
        Json::array({text("no session yet: the first call that needs the workspace makes it")}), false,
        {{"session", nullptr}});
  auto s = workspace::load(id);
  if (!s) return tool_error(s.error().message());
  Json status{{"session", s->id},
              {"kind", workspace::kind_name(s->kind)},
              {"base", s->base},
              {"commits", Json::array()},
              {"changed_files", Json::array()}};
  if (s->kind == workspace::Kind::git) {
    // Read by git inside a call of the session: its repository is the call's writing.
    static constexpr const char* kStatusScript =
        "git log --format='%h %s' \"$1\"..HEAD && echo '--' && "
        "git -c core.quotepath=off diff --name-only \"$1\" && "
        "git -c core.quotepath=off ls-files --others --exclude-standard";
    session::Request r;
    r.argv = {"sh", "-c", kStatusScript, "sh", s->base};
    r.host_toolchain = true;
    r.timeout = kToolDeadline;
    auto ran = run_in_session(std::move(r), flight, kFileAnswerCap);
    if (!ran) return tool_error(ran.error().message());
    if (ran->outcome.result->exit_status() != 0)
      return tool_error("git in the session failed:\n" + ran->err.head + joined(ran->lines));
    bool files = false;
    for (const auto& line : output_lines(ran->out.head)) {
      if (line == "--")
        files = true;
      else
        status[files ? "changed_files" : "commits"].push_back(line);
    }
  } else if (auto all = workspace::list(); all) {
    for (const auto& info : *all)
      if (info.session.id == s->id) status["changed_paths"] = info.pending;
  }
  std::string shown = "session " + s->id + " (" + workspace::kind_name(s->kind) + "), base " + s->base + "\n";
  shown += std::to_string(status["commits"].size()) + " commit(s) not applied:\n";
  for (const auto& c : status["commits"]) shown += "  " + c.get<std::string>() + "\n";
  shown += std::to_string(status["changed_files"].size()) + " changed file(s):\n";
  for (const auto& f : status["changed_files"]) shown += "  " + f.get<std::string>() + "\n";
  return tool_result(Json::array({text(shown)}), false, status);
}

// ---- what is a `chock` command of its own -------------------------------------

std::vector<std::string> Server::layer_args() const {
  std::vector<std::string> a;
  if (!o_.layers.org_bundle.empty()) a.insert(a.end(), {"--org-bundle", o_.layers.org_bundle});
  for (const auto& r : o_.layers.policy_rules) a.insert(a.end(), {"--policy-rule", r});
  return a;
}

// Where a command that needs no workspace runs: the session, else the project.
std::vector<std::string> Server::place() const {
  if (const std::string id = session(); !id.empty()) return {"--session", id};
  return {"--project", project()};
}

Expected<SelfResult> Server::command(std::vector<std::string> args, const std::string& input,
                                     session::Hooks::Ask ask) const {
  SelfCall c;
  c.ask = std::move(ask);
  c.chock = o_.chock;
  c.cwd = project();
  c.args = std::move(args);
  c.input = input;
  c.cap = kFileAnswerCap;
  return call_self(c);
}

std::vector<std::string> Server::said(const Captured& err) {
  std::vector<std::string> lines = chock_lines(err);
  for (const auto& line : lines) log(line);
  return lines;
}

Json Server::read_memory(const Json& args) {
  std::vector<std::string> a{"memory"};
  if (args.contains("name")) {
    a.insert(a.end(), {"read", args["name"].get<std::string>()});
  } else {
    a.push_back("list");
  }
  for (const auto& p : place()) a.push_back(p);
  auto r = command(a);
  if (!r) return tool_error(r.error().message());
  std::string shown = joined(said(r->err)) + r->out.head;
  if (shown.empty()) shown = "the knowledgebase has no notes";
  return tool_result(Json::array({text(shown)}), r->exit_status != 0);
}

Json Server::write_memory(const Json& args, Flight& flight) {
  std::vector<std::string> a{"memory",
                             "write",
                             args["name"].get<std::string>(),
                             "--kind",
                             args["kind"].get<std::string>(),
                             "--description",
                             args["description"].get<std::string>()};
  for (const auto& p : place()) a.push_back(p);
  for (const auto& l : layer_args()) a.push_back(l);
  auto r = command(a, args["body"].get<std::string>(), person_ask(flight));
  if (!r) return tool_error(r.error().message());
  return tool_result(Json::array({text(joined(said(r->err)) + r->out.head)}), r->exit_status != 0);
}

Json Server::fetch_url(const Json& args, Flight& flight) {
  std::vector<std::string> a{"fetch", args["url"].get<std::string>(), "--text"};
  if (args.contains("max_bytes")) {
    a.insert(a.end(), {"--max-bytes", std::to_string(args["max_bytes"].get<long long>())});
  }
  for (const auto& p : place()) a.push_back(p);
  for (const auto& l : layer_args()) a.push_back(l);
  auto r = command(a, {}, person_ask(flight));
  if (!r) return tool_error(r.error().message());
  const std::vector<std::string> lines = said(r->err);
  Json content = Json::array({text(with_cut(r->out.head, r->out.cut()))});
  if (!lines.empty()) content.push_back(text("Chock:\n" + joined(lines)));
  return tool_result(content, r->exit_status != 0);
}

// The question is asked by `chock apply` itself (through the ask channel),
// so it names the commits and the paths they change; a change to the
// project's configuration is refused there before any question, as it needs
// a terminal that shows its diff.
Json Server::apply(const Json& args, Flight& flight) {
  const std::string id = session();
  if (id.empty()) return tool_error("no session yet: nothing to apply");
  const std::string mode = args.value("mode", std::string("merge"));
  std::vector<std::string> cmd{"apply", id, "--mode", mode};
  for (const auto& l : layer_args()) cmd.push_back(l);
  session::Hooks::Ask ask = person_ask(flight);
  if (!ask) {
    auto table = policy_table();
    if (!table) return tool_error(table.error().message());
    if (table->decide(policy::kWorkspaceApply).decision == policy::Decision::ask)
      return tool_error(
          "workspace.apply asks, and this client cannot ask the person (no elicitation): the person applies "
          "it with `chock apply " +
          id + "` in the project");
  }
  auto r = command(cmd, {}, std::move(ask));
  if (!r) return tool_error(r.error().message());
  return tool_result(Json::array({text(joined(said(r->err)) + r->out.head)}), r->exit_status != 0);
}

}  // namespace chock::mcp
