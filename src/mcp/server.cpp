#include "mcp/server.hpp"

#include <signal.h>

#include <deque>
#include <optional>

#include "chock/workspace.hpp"
#include "mcp/self_call.hpp"
#include "policy/policy.hpp"
#include "util/io.hpp"
#include "util/split.hpp"

namespace chock::mcp {

namespace {

constexpr std::size_t kOutputCap = 100U << 10;    // of run_command's stdout and stderr, each
constexpr std::size_t kFileAnswerCap = 4U << 20;  // a file tool's JSON answer

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

std::string with_cut(const Captured& c) {
  if (c.cut() == 0) return c.head;
  return c.head + "\n[" + std::to_string(c.cut()) + " more bytes not shown]";
}

// Chock's own lines of a command's stderr, without progress rewrites.
std::vector<std::string> chock_lines(const Captured& err) {
  return output_lines(err.head);
}

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

class Server {
 public:
  Server(const ServerOptions& o, int in, int out) : o_(o), in_(in), out_(out), session_(o.session) {}

  int run() {
    for (;;) {
      std::optional<Message> m = next_message();
      if (!m) return 0;
      if (m->kind == Message::Kind::request) send(handle(*m));
    }
  }

 private:
  // The next message to act on: one read while waiting for an answer first.
  std::optional<Message> next_message() {
    if (!queued_.empty()) {
      Message m = std::move(queued_.front());
      queued_.pop_front();
      return m;
    }
    for (;;) {
      auto line = in_.next();
      if (!line) return std::nullopt;
      if (line->too_long) {
        send(error_response(nullptr, code::invalid_request,
                            "the line is over " + std::to_string(kMaxLineBytes >> 20) + " MiB"));
        continue;
      }
      Parsed p = parse_line(line->text);
      if (p.reply) send(*p.reply);
      if (p.message) return std::move(p.message);
    }
  }

  void send(const Json& message) { (void)write_all(out_, serialize(message), "stdout"); }

  Json handle(const Message& m) {
    if (m.method == "initialize") {
      if (!m.params.is_object())
        return error_response(m.id, code::invalid_params, "initialize takes an object");
      client_capabilities_ = m.params.value("capabilities", Json::object());
      return response(
          m.id, {{"protocolVersion", negotiate_version(m.params.value("protocolVersion", Json()))},
                 {"capabilities", {{"tools", {{"listChanged", false}}}}},
                 {"serverInfo", {{"name", "chock"}, {"title", "Chock"}, {"version", CHOCK_VERSION_STRING}}},
                 {"instructions",
                  "Every tool runs in a sandbox, in a throwaway copy of the project (a session). "
                  "Commit work with git in run_command; apply brings commits to the real project."}});
    }
    if (m.method == "ping") return response(m.id, Json::object());
    if (m.method == "tools/list") {
      auto table = policy_table();
      if (!table) return error_response(m.id, code::internal_error, table.error().message());
      Json tools = Json::array();
      for (const auto& t : tool_definitions())
        if (table->decide(tool_action(t["name"])).decision != policy::Decision::deny) tools.push_back(t);
      return response(m.id, {{"tools", tools}});
    }
    if (m.method == "tools/call") {
      if (!m.params.is_object() || !m.params.value("name", Json()).is_string())
        return error_response(m.id, code::invalid_params, "tools/call takes {name, arguments}");
      const std::string name = m.params["name"];
      Json args = m.params.value("arguments", Json::object());
      if (args.is_null()) args = Json::object();
      if (!args.is_object()) return error_response(m.id, code::invalid_params, "arguments is an object");
      bool known = false;
      for (const auto& t : tool_definitions()) known = known || t["name"] == name;
      if (!known) return error_response(m.id, code::invalid_params, "no such tool: " + name);
      auto table = policy_table();
      if (!table) return error_response(m.id, code::internal_error, table.error().message());
      const policy::Answer a = table->decide(tool_action(name));
      if (a.decision == policy::Decision::deny)
        return error_response(m.id, code::invalid_params,
                              "the tool " + name + " is denied by the policy (" + tool_action(name) +
                                  " = deny" +
                                  (a.deciding_rule ? " at " + a.deciding_rule->origin : std::string()) + ")");
      return response(m.id, call_tool(name, args));
    }
    return error_response(m.id, code::method_not_found, "no such method: " + m.method);
  }

  Expected<policy::Table> policy_table() const {
    config::LayerOptions l = o_.layers;
    l.project_dir = o_.project;
    auto layers = config::load_layers(l);
    if (!layers) return std::move(layers).error();
    return layers->table;
  }

  std::vector<std::string> layer_args() const {
    std::vector<std::string> a;
    if (!o_.layers.org_bundle.empty()) a.insert(a.end(), {"--org-bundle", o_.layers.org_bundle});
    for (const auto& r : o_.layers.policy_rules) a.insert(a.end(), {"--policy-rule", r});
    return a;
  }

  // Where a command that needs no workspace runs: the session, else the project.
  std::vector<std::string> place() const {
    if (!session_.empty()) return {"--session", session_};
    return {"--project", o_.project};
  }

  // `chock run` in the session (made, and kept, by the first).
  Expected<SelfResult> run_call(const std::vector<std::string>& argv, std::vector<std::string> flags,
                                const std::string& input, std::size_t cap) {
    SelfCall c;
    c.chock = o_.chock;
    c.cwd = o_.project;
    c.args = {"run"};
    if (session_.empty())
      c.args.insert(c.args.end(), {"--project", o_.project, "--keep"});
    else
      c.args.insert(c.args.end(), {"--session", session_});
    for (const auto& a : layer_args()) c.args.push_back(a);
    c.args.insert(c.args.end(), {"--program-stderr", "3", "--result", "/dev/fd/4"});
    if (!input.empty()) c.args.push_back("--stdin");
    for (auto& f : flags) c.args.push_back(std::move(f));
    c.args.push_back("--");
    c.args.insert(c.args.end(), argv.begin(), argv.end());
    c.input = input;
    c.cap = cap;
    c.run_streams = true;
    auto r = call_self(c);
    if (r && session_.empty()) {
      const std::string mark = "chock: session ";
      if (const std::size_t at = r->err.head.find(mark); at != std::string::npos) {
        const std::size_t end = r->err.head.find(' ', at + mark.size());
        if (end != std::string::npos) session_ = r->err.head.substr(at + mark.size(), end - at - mark.size());
      }
    }
    return r;
  }

  Expected<SelfResult> command(std::vector<std::string> args, const std::string& input = {}) const {
    SelfCall c;
    c.chock = o_.chock;
    c.cwd = o_.project;
    c.args = std::move(args);
    c.input = input;
    c.cap = kFileAnswerCap;
    return call_self(c);
  }

  Json call_tool(const std::string& name, const Json& args) {
    if (name == "run_command") return run_command(args);
    if (name == "task_output") return task_output(args);
    if (name == "read_memory") return read_memory(args);
    if (name == "write_memory") return write_memory(args);
    if (name == "fetch_url") return fetch_url(args);
    if (name == "workspace_status") return workspace_status();
    if (name == "apply") return apply(args);
    return file_call(name, args);
  }

  Json run_command(const Json& args) {
    const auto argv_at = args.find("argv");
    if (argv_at == args.end() || !argv_at->is_array() || argv_at->empty())
      return tool_error("argv is a non-empty array of strings");
    std::vector<std::string> argv;
    for (const auto& a : *argv_at) {
      if (!a.is_string()) return tool_error("argv is a non-empty array of strings");
      argv.push_back(a);
    }
    std::vector<std::string> flags;
    if (const auto cwd = args.find("cwd"); cwd != args.end()) {
      if (!cwd->is_string()) return tool_error("cwd is a string");
      flags.insert(flags.end(), {"--cwd", cwd->get<std::string>()});
    }
    if (const auto t = args.find("timeout_s"); t != args.end()) {
      if (!t->is_number() || t->get<double>() <= 0) return tool_error("timeout_s is a positive number");
      flags.insert(flags.end(), {"--timeout", std::to_string(t->get<double>())});
    }
    const bool background = args.value("background", false);
    if (background) flags.push_back("--background");
    auto r = run_call(argv, flags, "", kOutputCap);
    if (!r) return tool_error(r.error().message());
    const std::vector<std::string> lines = chock_lines(r->err);
    if (background) {
      std::string id = r->out.head.substr(0, r->out.head.find('\n'));
      if (r->exit_status != 0 || id.empty()) return tool_error(joined(lines));
      return tool_result(
          Json::array({text("task " + id + " started; task_output {\"id\": \"" + id + "\"} reads it")}),
          false, {{"task", id}, {"session", session_}});
    }
    Json result = Json::parse(r->result, nullptr, false);
    Json structured{{"stdout", r->out.head},
                    {"stderr", r->program_err.head},
                    {"stdout_bytes_cut", r->out.cut()},
                    {"stderr_bytes_cut", r->program_err.cut()},
                    {"chock", lines},
                    {"session", session_},
                    {"exit_code", nullptr},
                    {"signal", nullptr},
                    {"timed_out", false}};
    if (result.is_object()) {
      structured["exit_code"] = result.value("exit_code", Json());
      structured["signal"] = result.value("signal_name", Json());
      structured["timed_out"] = result.value("timed_out", false);
    }
    Json content = Json::array();
    content.push_back(text(with_cut(r->out)));
    if (r->program_err.total > 0) content.push_back(text("stderr:\n" + with_cut(r->program_err)));
    if (!lines.empty()) content.push_back(text("Chock:\n" + joined(lines)));
    std::string end = structured["signal"].is_string()
                          ? "killed by " + structured["signal"].get<std::string>()
                          : "exit code " + std::to_string(r->exit_status);
    content.push_back(text(end));
    return tool_result(content, r->exit_status != 0, structured);
  }

  Json task_output(const Json& args) {
    if (!args.value("id", Json()).is_string()) return tool_error("id is a string");
    auto r = command({"tasks", "show", args["id"].get<std::string>()});
    if (!r) return tool_error(r.error().message());
    return tool_result(Json::array({text(joined(chock_lines(r->err))), text(with_cut(r->out))}),
                       r->exit_status != 0);
  }

  Json file_call(const std::string& name, const Json& args) {
    static const std::pair<const char*, const char*> kOps[] = {
        {"read_file", "read"},      {"write_file", "write"}, {"edit_file", "edit"},
        {"list_directory", "list"}, {"glob", "glob"},        {"grep", "grep"}};
    Json request = args;
    for (const auto& [tool, op] : kOps)
      if (name == tool) request["op"] = op;
    // Chock's own programs run on the host's toolchain, whatever the project's is.
    auto r = run_call({"/run/chock/bin/chock", "file-tool"},
                      {"--bind-chock", "--host-toolchain", "--timeout", "120"},
                      request.dump(-1, ' ', false, Json::error_handler_t::replace), kFileAnswerCap);
    if (!r) return tool_error(r.error().message());
    Json answer = Json::parse(r->out.head, nullptr, false);
    if (!answer.is_object())
      return tool_error("the file tool's call gave no answer:\n" + joined(chock_lines(r->err)) +
                        r->program_err.head);
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
    return tool_result(Json::array({text(shown)}), false, answer);
  }

  Json read_memory(const Json& args) {
    std::vector<std::string> a{"memory"};
    if (args.contains("name")) {
      if (!args["name"].is_string()) return tool_error("name is a string");
      a.insert(a.end(), {"read", args["name"].get<std::string>()});
    } else {
      a.push_back("list");
    }
    for (const auto& p : place()) a.push_back(p);
    auto r = command(a);
    if (!r) return tool_error(r.error().message());
    std::string shown = joined(chock_lines(r->err)) + r->out.head;
    if (shown.empty()) shown = "the knowledgebase has no notes";
    return tool_result(Json::array({text(shown)}), r->exit_status != 0);
  }

  Json write_memory(const Json& args) {
    for (const char* k : {"name", "kind", "description", "body"})
      if (!args.value(k, Json()).is_string()) return tool_error(std::string(k) + " is a string");
    std::vector<std::string> a{"memory",
                               "write",
                               args["name"].get<std::string>(),
                               "--kind",
                               args["kind"].get<std::string>(),
                               "--description",
                               args["description"].get<std::string>()};
    for (const auto& p : place()) a.push_back(p);
    for (const auto& l : layer_args()) a.push_back(l);
    auto r = command(a, args["body"].get<std::string>());
    if (!r) return tool_error(r.error().message());
    return tool_result(Json::array({text(joined(chock_lines(r->err)) + r->out.head)}), r->exit_status != 0);
  }

  Json fetch_url(const Json& args) {
    if (!args.value("url", Json()).is_string()) return tool_error("url is a string");
    std::vector<std::string> a{"fetch", args["url"].get<std::string>(), "--text"};
    if (args.contains("max_bytes")) {
      if (!args["max_bytes"].is_number_integer() || args["max_bytes"].get<long long>() < 1)
        return tool_error("max_bytes is a positive integer");
      a.insert(a.end(), {"--max-bytes", std::to_string(args["max_bytes"].get<long long>())});
    }
    for (const auto& p : place()) a.push_back(p);
    for (const auto& l : layer_args()) a.push_back(l);
    auto r = command(a);
    if (!r) return tool_error(r.error().message());
    const std::vector<std::string> lines = chock_lines(r->err);
    Json content = Json::array({text(with_cut(r->out))});
    if (!lines.empty()) content.push_back(text("Chock:\n" + joined(lines)));
    return tool_result(content, r->exit_status != 0);
  }

  Json workspace_status() {
    if (session_.empty())
      return tool_result(
          Json::array({text("no session yet: the first call that needs the workspace makes it")}), false,
          {{"session", nullptr}});
    auto s = workspace::load(session_);
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
      auto r = run_call({"sh", "-c", kStatusScript, "sh", s->base}, {"--host-toolchain", "--timeout", "120"},
                        "", kFileAnswerCap);
      if (!r) return tool_error(r.error().message());
      if (r->exit_status != 0)
        return tool_error("git in the session failed:\n" + r->program_err.head + joined(chock_lines(r->err)));
      bool files = false;
      for (const auto& line : chock_lines(r->out)) {
        if (line == "--")
          files = true;
        else
          status[files ? "changed_files" : "commits"].push_back(line);
      }
    } else if (auto all = workspace::list(); all) {
      for (const auto& info : *all)
        if (info.session.id == s->id) status["changed_paths"] = info.pending;
    }
    std::string shown =
        "session " + s->id + " (" + workspace::kind_name(s->kind) + "), base " + s->base + "\n";
    shown += std::to_string(status["commits"].size()) + " commit(s) not applied:\n";
    for (const auto& c : status["commits"]) shown += "  " + c.get<std::string>() + "\n";
    shown += std::to_string(status["changed_files"].size()) + " changed file(s):\n";
    for (const auto& f : status["changed_files"]) shown += "  " + f.get<std::string>() + "\n";
    return tool_result(Json::array({text(shown)}), false, status);
  }

  // Asks the client (elicitation); nullopt when it cannot or did not answer.
  std::optional<Json> ask_client(const std::string& method, Json params) {
    const std::string id = "chock-" + std::to_string(++asked_);
    send(request(id, method, std::move(params)));
    for (;;) {
      auto line = in_.next();
      if (!line) return std::nullopt;
      Parsed p = parse_line(line->text);
      if (p.reply) send(*p.reply);
      if (!p.message) continue;
      if (p.message->kind == Message::Kind::response && p.message->id == id) {
        if (p.message->is_error()) return std::nullopt;
        return p.message->result;
      }
      if (p.message->kind != Message::Kind::response) queued_.push_back(std::move(*p.message));
    }
  }

  Json apply(const Json& args) {
    if (session_.empty()) return tool_error("no session yet: nothing to apply");
    std::string mode = "merge";
    if (args.contains("mode")) {
      if (!args["mode"].is_string()) return tool_error("mode is merge, rebase or squash");
      mode = args["mode"];
    }
    auto table = policy_table();
    if (!table) return tool_error(table.error().message());
    const policy::Answer a = table->decide(policy::kWorkspaceApply);
    std::vector<std::string> cmd{"apply", session_, "--mode", mode};
    for (const auto& l : layer_args()) cmd.push_back(l);
    if (a.decision == policy::Decision::ask) {
      const std::string by_hand = "chock apply " + session_;
      if (!client_capabilities_.contains("elicitation"))
        return tool_error(
            "workspace.apply asks, and this client cannot ask the person (no elicitation): the "
            "person applies it with `" +
            by_hand + "` in the project");
      auto answer = ask_client(
          "elicitation/create",
          {{"message", "Apply the commits of Chock session " + session_ + " onto the project's branch (" +
                           mode + ")? workspace_status lists them."},
           {"requestedSchema",
            {{"type", "object"},
             {"properties", {{"apply", {{"type", "boolean"}, {"title", "Apply the session's commits"}}}}},
             {"required", {"apply"}}}}});
      const bool yes = answer && answer->value("action", "") == "accept" && answer->contains("content") &&
                       (*answer)["content"].is_object() && (*answer)["content"].value("apply", false);
      if (!yes) return tool_error("the person did not approve applying session " + session_);
      cmd.push_back("--yes");
    }
    auto r = command(cmd);
    if (!r) return tool_error(r.error().message());
    return tool_result(Json::array({text(joined(chock_lines(r->err)) + r->out.head)}), r->exit_status != 0);
  }

  const ServerOptions& o_;
  LineReader in_;
  int out_;
  std::string session_;
  std::deque<Message> queued_;
  Json client_capabilities_ = Json::object();
  long asked_ = 0;
};

}  // namespace

int serve(const ServerOptions& options, int in, int out) {
  ::signal(SIGPIPE, SIG_IGN);  // a client gone is seen as a failed write
  Server s(options, in, out);
  return s.run();
}

}  // namespace chock::mcp
