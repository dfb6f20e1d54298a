// chock mcp [--project DIR] [--session ID | --allow-dirty] [--org-bundle PATH] [--policy-rule A=D]...
//           [--http ADDRESS:PORT [--token-file PATH]]
//   Chock as an agent's tools, over MCP on stdio (src/mcp/server.cpp), or
//   over Streamable HTTP on the loopback (src/mcp/http_transport.cpp).
// chock mcp wrap NAME [--project DIR] [--session ID | --keep] [--allow-dirty] [--env K=V]... -- CMD [ARG...]
//   A third-party MCP server in a sandbox, behind Chock's relay (src/mcp/wrap.cpp).
#include <unistd.h>

#include <cstdio>
#include <memory>

#include "chock/workspace.hpp"
#include "cli/command.hpp"
#include "cli/fetch_hop.hpp"
#include "cli/layer_flags.hpp"
#include "cli/outcome.hpp"
#include "mcp/http_transport.hpp"
#include "mcp/server.hpp"
#include "mcp/wrap.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"

namespace chock::cli {

namespace {

struct McpOptions {
  std::string project;
  std::string session;
  std::string http;  // ADDRESS:PORT
  std::string token_file;
  bool keep = false;
  bool allow_dirty = false;
  config::LayerOptions layers;
  std::string name;
  std::vector<std::string> env;
  std::vector<std::string> argv;
};

// --session's project, else --project's (or the current directory's) top level.
Expected<std::string> project_of(const McpOptions& o) {
  if (!o.session.empty()) {
    auto s = workspace::load(o.session);
    if (!s) return std::move(s).error();
    return s->project;
  }
  return workspace::project_root(o.project.empty() ? "." : o.project);
}

// A failure at start is the server's to say (mcp/server.hpp): the client
// hears it as the error of its requests, not as a closed connection.
int serve(const McpOptions& o) {
  auto project = project_of(o);
  mcp::ServerOptions s;
  s.chock = dir_of_self() + "/chock";
  s.project = project ? *project : std::string();
  s.failure = project ? std::string() : project.error().message();
  s.session = o.session;
  s.allow_dirty = o.allow_dirty;
  s.layers = o.layers;
  s.project_from_roots = o.project.empty() && o.session.empty();
  if (o.http.empty()) {
    if (!o.token_file.empty()) {
      std::fprintf(stderr, "chock: mcp: --token-file is for --http\n");
      return 2;
    }
    return mcp::serve(s, STDIN_FILENO, STDOUT_FILENO);
  }
  auto listen = mcp::parse_listen(o.http);
  if (!listen) {
    std::fprintf(stderr, "chock: mcp: %s\n", listen.error().message().c_str());
    return 2;
  }
  mcp::HttpOptions h;
  h.address = listen->first;
  h.port = listen->second;
  h.token_file = o.token_file;
  h.server = s;
  return mcp::serve_http(h);
}

int wrap(const McpOptions& o) {
  auto project = project_of(o);
  if (!project) return mcp::serve_failure(project.error().message(), STDIN_FILENO, STDOUT_FILENO);
  mcp::WrapOptions w;
  w.name = o.name;
  w.project = *project;
  w.env = o.env;
  w.argv = o.argv;
  w.layers = o.layers;
  w.session = o.session;
  w.keep = o.keep;
  w.allow_dirty = o.allow_dirty;
  // A client that stops waiting (SIGTERM, after closing the server's input)
  // ends the server at once; the relay still ends its session and says so.
  CancelSignals cancel;
  w.cancel_fd = cancel.fd();
  return mcp::wrap(w);
}

}  // namespace

void add_mcp_command(Command app, Action& action) {
  auto o = std::make_shared<McpOptions>();
  Command cmd = app.add_subcommand(
      "mcp",
      "Serve an agent's tools over MCP (stdio), each call sandboxed; `mcp wrap` sandboxes an MCP server");
  cmd.add_option("--project", o->project, "The project (default: the current directory)");
  cmd.add_option("--session", o->session,
                 "Continue this session (default: a new one, made by the first call)");
  cmd.add_option(
         "--http", o->http,
         "Serve over MCP's Streamable HTTP at http://ADDRESS:PORT/mcp instead of stdio (loopback only; "
         "each client session gets a Chock session of its own)")
      .type_name("ADDRESS:PORT");
  cmd.add_option(
         "--token-file", o->token_file,
         "With --http: the bearer token clients must send, the file's first line (default: one made and "
         "printed once)")
      .type_name("PATH");
  cmd.add_flag("--allow-dirty", o->allow_dirty,
               "The new session starts from the uncommitted work too, so the file tools read what your "
               "editor shows")
      .excludes(cmd.get_option("--session"));
  add_layer_flags(cmd, o->layers);
  cmd.callback([o, &action, cmd] {
    if (!cmd.subcommand_given()) action = [o] { return serve(*o); };
  });
  Command w = cmd.add_subcommand("wrap", "Run a third-party MCP server in a sandbox, behind Chock's relay");
  w.add_option("name", o->name, "The server's name in the policy (mcp.NAME.network, mcp.NAME.tool.TOOL)")
      .required();
  w.add_option("--project", o->project,
               "The project whose workspace it runs in (default: the current directory)");
  w.add_option("--session", o->session,
               "Run in this session, so what the server keeps in its workspace lasts across its runs "
               "(default: a new session, removed at the end when it holds no work)");
  w.add_flag("--keep", o->keep, "Keep the new session, work or none, for later runs (--session ID)")
      .excludes(w.get_option("--session"));
  w.add_flag("--allow-dirty", o->allow_dirty, "The new session starts from the uncommitted work too")
      .excludes(w.get_option("--session"));
  w.add_option("--env", o->env, "K=V in the server's environment (repeatable)")
      .type_size(1)
      .expected(1)
      .take_all();
  add_layer_flags(w, o->layers);
  // Not positionals_at_end: NAME comes first, and options may follow it before `--`.
  w.add_option("command", o->argv, "The server's command, after --").required();
  w.callback([o, &action] { action = [o] { return wrap(*o); }; });
}

}  // namespace chock::cli
