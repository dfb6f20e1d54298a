#include "mcp/wrap.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/io.hpp"

extern char** environ;

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

namespace {

struct Child {
  pid_t pid = -1;
  UniqueFd in, out;  // its stdin (ours to write), its stdout (ours to read)
};

Expected<Child> start(const std::vector<std::string>& args) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) return sys_error("pipe, for the server");
  UniqueFd in_r(in[0]), in_w(in[1]), out_r(out[0]), out_w(out[1]);
  std::vector<std::string> copy = args;
  std::vector<char*> argv;
  argv.reserve(copy.size() + 1);
  for (auto& a : copy) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return sys_error("fork, for the server");
  if (pid == 0) {
    if (::dup2(in_r.get(), 0) < 0 || ::dup2(out_w.get(), 1) < 0) ::_exit(127);
    // No controlling terminal: nobody can answer for a server, so what asks is refused.
    ::setsid();
    // The sandbox (and with it the server) ends when this relay does.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(argv[0], argv.data(), environ);
    ::_exit(127);
  }
  return Child{pid, std::move(in_w), std::move(out_r)};
}

}  // namespace

int wrap(const WrapOptions& o) {
  config::LayerOptions lo = o.layers;
  lo.project_dir = o.project;
  auto layers = config::load_layers(lo);
  if (!layers) {
    std::fprintf(stderr, "chock: mcp wrap: %s\n", layers.error().message().c_str());
    return 125;
  }
  const std::string network_action = policy::mcp_network(o.name);
  const policy::Answer net = layers->table.decide(network_action);
  const bool filtered = net.decision == policy::Decision::allow;
  if (net.decision == policy::Decision::ask)
    std::fprintf(stderr,
                 "chock: mcp wrap: %s asks, and nobody can answer for a server: its network is none (%s = "
                 "allow in chock.zon gives it the filtered network)\n",
                 network_action.c_str(), network_action.c_str());
  std::vector<std::string> args{o.chock,   "run",         "--project", o.project,
                                "--stdin", "--plain-env", "--net",     filtered ? "filtered" : "none"};
  if (!o.layers.org_bundle.empty()) args.insert(args.end(), {"--org-bundle", o.layers.org_bundle});
  for (const auto& r : o.layers.policy_rules) args.insert(args.end(), {"--policy-rule", r});
  for (const auto& e : o.env) args.insert(args.end(), {"--env", e});
  args.push_back("--");
  args.insert(args.end(), o.argv.begin(), o.argv.end());

  ::signal(SIGPIPE, SIG_IGN);
  auto child = start(args);
  if (!child) {
    std::fprintf(stderr, "chock: mcp wrap: %s\n", child.error().message().c_str());
    return 125;
  }
  ToolFilter filter(o.name, layers->table);
  // Apart, so a write to a slow client never holds up the reading of its requests.
  std::mutex lock;    // the filter's state
  std::mutex output;  // our stdout
  std::atomic<bool> client_gone{false};
  auto to_client = [&output](const std::string& line) {
    std::lock_guard<std::mutex> g(output);
    (void)write_all(STDOUT_FILENO, line, "stdout");
  };

  std::thread from_server([&] {
    LineReader server(child->out.get());
    while (auto line = server.next()) {
      if (line->too_long) {
        std::fprintf(stderr, "chock: mcp wrap: a line of the server %s over 8 MiB was dropped\n",
                     o.name.c_str());
        continue;
      }
      Parsed p = parse_line(line->text);
      if (!p.message) {
        if (p.reply)
          std::fprintf(stderr, "chock: mcp wrap: the server %s wrote a line that is not a message: %s\n",
                       o.name.c_str(), printable(line->text.substr(0, 200)).c_str());
        continue;
      }
      std::optional<Json> instead;
      {
        std::lock_guard<std::mutex> g(lock);
        instead = filter.from_server(*p.message);
      }
      to_client(instead ? serialize(*instead) : line->text + "\n");
    }
    // The server ended by itself: so does the relay, and the client sees its output end.
    if (!client_gone.load()) {
      int status = 0;
      while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
      }
      ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    }
  });

  LineReader client(STDIN_FILENO);
  while (auto line = client.next()) {
    if (line->too_long) {
      to_client(serialize(error_response(nullptr, code::invalid_request, "the line is over 8 MiB")));
      continue;
    }
    Parsed p = parse_line(line->text);
    if (p.reply) to_client(serialize(*p.reply));
    if (!p.message) continue;
    std::optional<Json> refusal;
    {
      std::lock_guard<std::mutex> g(lock);
      refusal = filter.from_client(*p.message);
    }
    if (refusal) {
      to_client(serialize(*refusal));
      continue;
    }
    if (!write_all(child->in.get(), line->text + "\n", "the server's stdin")) break;
  }
  // The client is gone: the server's input ends, and its sandbox with it.
  // As MCP's stdio shutdown goes: its input closed, a moment to end by
  // itself, then SIGTERM, which `chock run` turns into the end of every
  // process of the call.
  client_gone.store(true);
  child->in.reset();
  int status = 0;
  pid_t ended = 0;
  for (int i = 0; i < 20 && (ended = ::waitpid(child->pid, &status, WNOHANG)) == 0; ++i) ::usleep(100000);
  if (ended == 0) {
    ::kill(child->pid, SIGTERM);
    while (::waitpid(child->pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  from_server.join();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace chock::mcp
