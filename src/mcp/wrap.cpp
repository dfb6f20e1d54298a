#include "mcp/wrap.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "chock/session.hpp"
#include "chock/workspace.hpp"
#include "mcp/questions.hpp"
#include "mcp/server.hpp"
#include "mcp/wrap_session.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"

namespace chock::mcp {

bool ToolFilter::denied(const std::string& tool) const {
  return table_.decide(policy::mcp_tool(server_, tool)).decision == policy::Decision::deny;
}

std::optional<Json> ToolFilter::from_client(const Message& m) {
  if (m.kind != Message::Kind::request) return std::nullopt;
  if (m.method == "tools/list") listing_.push_back(m.id.dump());
  if (m.method != "tools/call" || !m.params.is_object()) return std::nullopt;
  const Json name = m.params.value("name", Json());
  if (!name.is_string() || !denied(name)) return std::nullopt;
  const std::string action = policy::mcp_tool(server_, name.get<std::string>());
  return error_response(m.id, code::invalid_params,
                        "the tool " + name.get<std::string>() + " of the MCP server " + server_ +
                            " is denied by the policy (" + action + " = deny)");
}

std::optional<Json> ToolFilter::from_server(const Message& m) {
  if (m.kind != Message::Kind::response) return std::nullopt;
  const auto at = std::find(listing_.begin(), listing_.end(), m.id.dump());
  if (at == listing_.end()) return std::nullopt;
  listing_.erase(at);
  if (!m.result.is_object() || !m.result.contains("tools") || !m.result["tools"].is_array())
    return std::nullopt;
  Json result = m.result;
  Json kept = Json::array();
  for (const auto& t : result["tools"])
    if (!t.is_object() || !t.value("name", Json()).is_string() || !denied(t["name"])) kept.push_back(t);
  result["tools"] = kept;
  return response(m.id, result);
}

std::optional<Json> RelayLogging::from_client(const Message& m) {
  if (m.kind != Message::Kind::request) return std::nullopt;
  if (m.method == "initialize") initializing_.push_back(m.id.dump());
  if (m.method != "logging/setLevel") return std::nullopt;
  const Json level = m.params.is_object() ? m.params.value("level", Json()) : Json();
  const int rank = log_severity(level);
  if (rank >= 0) threshold_ = rank;
  if (!declared_) return std::nullopt;  // the server's to answer
  if (rank < 0)
    return error_response(m.id, code::invalid_params,
                          "logging/setLevel's level is one of debug, info, notice, warning, error, critical, "
                          "alert, emergency");
  return response(m.id, Json::object());
}

std::optional<Json> RelayLogging::from_server(const Message& m) {
  if (m.kind != Message::Kind::response) return std::nullopt;
  const auto at = std::find(initializing_.begin(), initializing_.end(), m.id.dump());
  if (at == initializing_.end()) return std::nullopt;
  initializing_.erase(at);
  // What is not an answer with capabilities passes as it came: the client judges it.
  if (!m.result.is_object() || !m.result.contains("capabilities") || !m.result["capabilities"].is_object() ||
      m.result["capabilities"].contains("logging"))
    return std::nullopt;
  Json result = m.result;
  result["capabilities"]["logging"] = Json::object();
  declared_ = true;
  return response(m.id, result);
}

std::optional<Json> RelayLogging::message(const std::string& level, const std::string& line) const {
  if (log_severity(level) < threshold_) return std::nullopt;
  return notification("notifications/message", {{"level", level}, {"logger", "chock"}, {"data", line}});
}

namespace {

// Ids of the relay's own questions to the client: "chock-wrap-<random>-N",
// which the server cannot guess (and a request of its own under that
// prefix is refused all the same).
std::string question_prefix() {
  std::uint64_t n = 0;
  if (::getrandom(&n, sizeof n, 0) != static_cast<ssize_t>(sizeof n))
    n = static_cast<std::uint64_t>(::getpid());
  char buf[40];
  std::snprintf(buf, sizeof buf, "chock-wrap-%016llx-", static_cast<unsigned long long>(n));
  return buf;
}

// The client declared that it answers elicitation requests.
bool declares_elicitation(const Message& m) {
  if (m.kind != Message::Kind::request || m.method != "initialize" || !m.params.is_object()) return false;
  const Json caps = m.params.value("capabilities", Json());
  return caps.is_object() && caps.contains("elicitation") && caps["elicitation"].is_object();
}

// The wrapped server's run through the session engine, on a thread of its
// own: its outcome, once it has ended.
class ServerRun {
 public:
  ServerRun(session::Request request, session::Hooks hooks) : call_(std::move(request), std::move(hooks)) {}
  void start() {
    thread_ = std::thread([this] {
      auto outcome = call_.wait();
      std::lock_guard g(mutex_);
      if (!outcome) {
        error_ = outcome.error().message();
        std::fprintf(stderr, "chock: mcp wrap: %s\n", printable(error_).c_str());
        status_ = 125;
      } else {
        status_ = outcome->result ? outcome->result->exit_status() : 125;
        outcome_ = std::move(*outcome);
      }
      ended_.notify_all();
    });
  }
  // Its exit status once it has ended, waiting at most `within` (then nullopt).
  std::optional<int> ended(std::chrono::milliseconds within) {
    std::unique_lock g(mutex_);
    if (!ended_.wait_for(g, within, [this] { return status_.has_value(); })) return std::nullopt;
    return status_;
  }
  void cancel() { call_.cancel(); }
  // From the relay's main thread and from its reader of the server (a
  // server that ended by itself) alike: one joins, the other waits for it.
  // Two joins of one std::thread wait forever (the relay hung so).
  int join() {
    std::lock_guard g(join_mutex_);
    if (thread_.joinable()) thread_.join();
    return status_.value_or(125);
  }
  // After join(): how the call ended (nullopt: it failed, as error() says).
  [[nodiscard]] const std::optional<session::Outcome>& outcome() const { return outcome_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  session::Call call_;
  std::thread thread_;
  std::mutex join_mutex_;
  std::mutex mutex_;
  std::condition_variable ended_;
  std::optional<int> status_;
  std::optional<session::Outcome> outcome_;
  std::string error_;
};

// What the client hears when the server's run has ended: the session, what
// it holds and how to take it back (a session of one call: the engine's
// own last line, which says so; one that lasts: read here), or why the
// server could not run. The level, and the line.
std::pair<std::string, std::string> end_of_run(const WrapOptions& o, const ServerRun& run,
                                               const std::string& engine_line) {
  const std::string server = "the MCP server " + printable(o.name) + ": ";
  if (!run.outcome()) return {"error", server + printable(run.error())};
  const session::Outcome& out = *run.outcome();
  if (out.created && !o.keep)
    return {"info", server + (engine_line.empty() ? "session " + out.session + " ended" : engine_line)};
  auto s = workspace::load(out.session);
  if (!s) return {"info", server + "session " + out.session + " kept: " + printable(s.error().message())};
  std::string line = kept_line(*s, held_by(*s, o.layers), o.name);
  std::fprintf(stderr, "chock: %s\n", line.c_str());
  return {"info", server + line};
}

}  // namespace

int wrap(const WrapOptions& o) {
  config::LayerOptions lo = o.layers;
  lo.project_dir = o.project;
  auto layers = config::load_layers(lo);
  if (!layers) return serve_failure(layers.error().message(), STDIN_FILENO, STDOUT_FILENO);
  const std::string network_action = policy::mcp_network(o.name);
  const policy::Answer net = layers->table.decide(network_action);
  const bool filtered = net.decision == policy::Decision::allow;
  if (net.decision == policy::Decision::ask)
    std::fprintf(stderr,
                 "chock: mcp wrap: %s asks, and nobody can answer for a server: its network is none (%s = "
                 "allow in chock.zon gives it the filtered network)\n",
                 network_action.c_str(), network_action.c_str());
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "chock: mcp wrap: pipe, for the server: %s\n", std::strerror(errno));
    return 125;
  }
  UniqueFd in_write(in[1]), out_read(out[0]), err_read(err[0]);
  // The server's ends, until its sandbox holds them. Its stderr too is a
  // pipe of ours, relayed: never the person's terminal.
  std::mutex ends_mutex;
  UniqueFd in_read(in[0]), out_write(out[1]), err_write(err[1]);
  auto let_go_of_ends = [&] {
    std::lock_guard g(ends_mutex);
    in_read.reset();
    out_write.reset();
    err_write.reset();
  };
  session::Request r;
  r.project = o.project;
  r.session = o.session;
  r.keep = o.keep;
  r.allow_dirty = o.allow_dirty;
  r.cancel_fd = o.cancel_fd;
  r.argv = o.argv;
  r.env = o.env;
  r.plain_env = true;
  r.pass_stdin = true;
  r.stdio = {in_read.get(), out_write.get(), err_write.get()};
  r.network = filtered ? Network::filtered : Network::none;
  r.org_bundle = o.layers.org_bundle;
  r.policy_rules = o.layers.policy_rules;
  // Apart, so a write to a slow client never holds up the reading of its requests.
  std::mutex lock;    // the filter's and the logging's state
  std::mutex output;  // our stdout
  std::atomic<bool> client_gone{false};
  auto to_client = [&output](const std::string& line) {
    std::lock_guard<std::mutex> g(output);
    (void)write_all(STDOUT_FILENO, line, "stdout");
  };
  // The server's own net.connect rows that ask are asked of the person
  // through the client, when it declared elicitation; else they are refused.
  const std::string prefix = question_prefix();
  Outgoing questions([&to_client](const Json& m) { to_client(serialize(m)); }, prefix);
  std::atomic<bool> can_elicit{false};
  // The engine's last line of a session of one call: removed, or kept and why.
  std::mutex said;
  std::string engine_end;
  session::Hooks hooks;
  hooks.say = [&said, &engine_end](const std::string& line) {
    std::fprintf(stderr, "chock: %s\n", line.c_str());
    if (line.starts_with("session ") &&
        (line.find(" removed: ") != std::string::npos || line.find(" kept: ") != std::string::npos)) {
      std::lock_guard g(said);
      engine_end = line;
    }
  };
  hooks.started = let_go_of_ends;
  hooks.ask = [&questions, &can_elicit, during = "the MCP server " + printable(o.name)](
                  const std::string& action, const std::string& what, bool offer_always, int cancel_fd) {
    if (!can_elicit.load())
      return session::Answer{false, false, policy::nobody_to_ask(action) + " (this client cannot be asked)"};
    return ask_person(questions, {action, what, during, offer_always}, cancel_fd, nullptr);
  };
  // A server never commits: what it changed in a git session and left
  // uncommitted is work, and keeps a session of one call.
  hooks.work_beyond_commits = [&o](const std::string& id) -> std::string {
    auto s = workspace::load(id);
    if (!s || s->kind != workspace::Kind::git) return {};
    const Held held = held_by(*s, o.layers);
    if (!held.problem.empty())
      return "its uncommitted changes could not be counted (" + printable(held.problem) + ")";
    if (held.uncommitted.empty()) return {};
    return uncommitted_words(id, held.uncommitted) + ", --session " + id + " continues it";
  };

  ::signal(SIGPIPE, SIG_IGN);
  ServerRun run(std::move(r), std::move(hooks));
  run.start();
  ToolFilter filter(o.name, layers->table);
  RelayLogging logging;
  // Said once, by whichever side sees the run end first.
  std::once_flag told;
  auto tell_end = [&] {
    std::call_once(told, [&] {
      std::string engine_line;
      {
        std::lock_guard g(said);
        engine_line = engine_end;
      }
      const auto [level, line] = end_of_run(o, run, engine_line);
      std::optional<Json> note;
      {
        std::lock_guard<std::mutex> g(lock);
        note = logging.message(level, line);
      }
      if (note) to_client(serialize(*note));
    });
  };

  std::thread from_server([&] {
    LineReader server(out_read.get());
    while (auto line = server.next()) {
      if (line->too_long) {
        std::fprintf(stderr, "chock: mcp wrap: a line of the server %s over 8 MiB was dropped\n",
                     o.name.c_str());
        continue;
      }
      Parsed p = parse_line(line->text);
      if (p.batch) p.reply = error_response(nullptr, code::invalid_request, "a batch (JSON array)");
      if (!p.message) {
        if (p.reply) {
          // Why, as the line's own error answer says ("JSON nested deeper than 64 levels").
          const Json& error = (*p.reply)["error"];
          const std::string why = error.is_object() ? error.value("message", std::string()) : std::string();
          std::fprintf(stderr, "chock: mcp wrap: the server %s wrote a line that is not a message (%s): %s\n",
                       o.name.c_str(), printable(why).c_str(), printable(line->text.substr(0, 200)).c_str());
        }
        continue;
      }
      const Message& m = *p.message;
      if (m.kind == Message::Kind::request && m.id.is_string() &&
          m.id.get<std::string>().starts_with("chock-wrap-")) {
        // Its answer could be taken for the person's answer to Chock's question.
        std::fprintf(stderr,
                     "chock: mcp wrap: the server %s sent a request under the relay's own ids; dropped\n",
                     printable(o.name).c_str());
        continue;
      }
      std::optional<Json> instead;
      {
        std::lock_guard<std::mutex> g(lock);
        instead = filter.from_server(m);
        if (!instead) instead = logging.from_server(m);
      }
      to_client(instead ? serialize(*instead) : line->text + "\n");
    }
    // The server ended by itself: so does the relay, and the client sees its output end.
    if (!client_gone.load()) {
      const int status = run.join();
      tell_end();
      std::fflush(nullptr);
      ::_exit(status);
    }
  });
  std::thread from_server_stderr([&] {
    char buf[16384];
    for (ssize_t n; (n = ::read(err_read.get(), buf, sizeof buf)) != 0;) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || !write_all(STDERR_FILENO, std::string_view(buf, static_cast<std::size_t>(n)), "stderr"))
        break;
    }
  });
  // A server that never started leaves its ends with us: its output ends all the same.
  std::thread ends_keeper([&] {
    (void)run.ended(std::chrono::hours(24 * 365));
    let_go_of_ends();
  });

  LineReader client(STDIN_FILENO);
  while (auto line = client.next()) {
    if (line->too_long) {
      to_client(serialize(error_response(nullptr, code::invalid_request, "the line is over 8 MiB")));
      continue;
    }
    Parsed p = parse_line(line->text);
    // The relay reads every message to filter it, one a line: a batch is not relayed.
    if (p.batch)
      to_client(serialize(error_response(nullptr, code::invalid_request,
                                         "a batch (JSON array) is not relayed: one message a line")));
    if (p.reply) to_client(serialize(*p.reply));
    if (!p.message) continue;
    if (questions.take(*p.message)) continue;  // the person's answer to the relay's own question
    if (declares_elicitation(*p.message)) can_elicit.store(true);
    std::optional<Json> answer;
    {
      std::lock_guard<std::mutex> g(lock);
      answer = filter.from_client(*p.message);
      if (!answer) answer = logging.from_client(*p.message);
    }
    if (answer) {
      to_client(serialize(*answer));
      continue;
    }
    if (!write_all(in_write.get(), line->text + "\n", "the server's stdin")) break;
  }
  // The client is gone: the server's input ends, and its sandbox with it.
  // As MCP's stdio shutdown goes: its input closed, a moment to end by
  // itself, then the call cancelled, which ends every process of it. The
  // client may still read what comes until the relay exits: the run's end.
  client_gone.store(true);
  questions.end();
  in_write.reset();
  if (!run.ended(std::chrono::seconds(2))) run.cancel();
  const int status = run.join();
  tell_end();
  ends_keeper.join();
  from_server.join();
  from_server_stderr.join();
  return status;
}

}  // namespace chock::mcp
