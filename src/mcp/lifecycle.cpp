// The lifecycle of `chock mcp` (server_impl.hpp): initialize first and once,
// what may come before it, the requests answered at once (ping, tools/list,
// logging/setLevel), the project chosen by the client's roots, and Chock's
// own lines as the logging capability's notifications.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "chock/workspace.hpp"
#include "mcp/server_impl.hpp"
#include "util/escape.hpp"

namespace chock::mcp {

namespace {

// How grave one of Chock's lines is, by what it says.
std::string level_of(const std::string& line) {
  if (line.starts_with("sandbox setup failed") || line.find("could not") != std::string::npos) return "error";
  if (line.starts_with("warning:")) return "warning";
  for (const char* grave :
       {"refused", "killed", "timeout", "cancelled", "stopped", "limit", "tried to reach", "cannot", "OFF"})
    if (line.find(grave) != std::string::npos) return "warning";
  if (line.starts_with("note:") || (line.starts_with("session ") && line.find(" kept") != std::string::npos))
    return "notice";
  return "info";
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The local path of a file: URI ("file:///home/p%20q" is "/home/p q"), or
// "" when it is not one (another scheme, another host, a NUL).
std::string path_of_uri(const std::string& uri) {
  std::string rest;
  if (uri.starts_with("file:///"))
    rest = uri.substr(7);
  else if (uri.starts_with("file://localhost/"))
    rest = uri.substr(16);
  else
    return "";
  std::string path;
  for (std::size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '?' || rest[i] == '#') break;
    if (rest[i] != '%') {
      path += rest[i];
      continue;
    }
    const int hi = i + 2 < rest.size() ? hex_digit(rest[i + 1]) : -1;
    const int lo = i + 2 < rest.size() ? hex_digit(rest[i + 2]) : -1;
    if (hi < 0 || lo < 0) return "";
    path += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  if (path.find('\0') != std::string::npos) return "";
  return path;
}

bool opens_as_directory(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

}  // namespace

std::string project_failure(const ServerOptions& o, const std::string& project) {
  config::LayerOptions l = o.layers;
  l.project_dir = project;
  auto layers = config::load_layers(l);
  return layers ? std::string() : layers.error().message();
}

std::string Server::project() const {
  std::lock_guard lock(mutex_);
  return project_;
}

bool Server::waiting_for_roots() const {
  std::lock_guard lock(mutex_);
  return roots_pending_;
}

void Server::say_failure() {
  std::string line;
  {
    std::lock_guard lock(mutex_);
    if (failure_.empty() || failure_said_) return;
    failure_said_ = true;
    line = "chock: mcp: " + printable(failure_) + "\n";
  }
  std::fputs(line.c_str(), stderr);
}

void Server::log(const std::string& line) {
  const std::string level = level_of(line);
  {
    std::lock_guard lock(mutex_);
    if (!initialize_answered_ || log_severity(level) < log_threshold_) return;
  }
  send(notification("notifications/message", {{"level", level}, {"logger", "chock"}, {"data", line}}));
}

std::optional<Json> Server::out_of_turn(const Message& m) {
  std::lock_guard lock(mutex_);
  if (m.method == "initialize") {
    if (!initialize_answered_) return std::nullopt;
    return error_response(m.id, code::invalid_request,
                          "initialize was answered already (protocol version " + version_ +
                              "): a connection is initialized once");
  }
  if (m.method == "ping") return std::nullopt;
  if (!initialize_answered_)
    return error_response(m.id, code::invalid_request,
                          "initialize comes first: this server has not been initialized (only ping "
                          "may come before it)");
  if (!failure_.empty() && !roots_pending_)
    return error_response(m.id, code::not_serving, "chock: mcp: " + printable(failure_));
  return std::nullopt;
}

Json Server::initialize(const Message& m) {
  Json supported = Json::array();
  for (const char* v : kProtocolVersions) supported.push_back(v);
  if (!m.params.is_object())
    return error_response(m.id, code::invalid_params,
                          "initialize takes an object: {protocolVersion, capabilities, clientInfo}");
  const Json requested = m.params.value("protocolVersion", Json());
  if (!requested.is_string())
    return error_response(
        m.id, code::invalid_params,
        requested.is_null() ? "initialize's protocolVersion is missing"
                            : "initialize's protocolVersion is a string, not " +
                                  requested.dump(-1, ' ', true, Json::error_handler_t::replace).substr(0, 40),
        {{"supported", supported}, {"requested", requested}});
  const Json capabilities = m.params.value("capabilities", Json::object());
  if (!capabilities.is_object())
    return error_response(m.id, code::invalid_params, "initialize's capabilities is an object");
  const std::string version = negotiate_version(requested);
  bool settle_now = false;
  std::string failure;
  {
    std::lock_guard lock(mutex_);
    initialize_answered_ = true;
    version_ = version;
    client_capabilities_ = capabilities;
    if (!settled_) {
      roots_pending_ = capabilities.contains("roots");
      settle_now = !roots_pending_;
    }
    failure = failure_;
  }
  std::string instructions =
      "Every tool runs in a sandbox, in a throwaway copy of the project (a session). "
      "Commit work with git in run_command; apply brings commits to the real project.";
  if (!failure.empty() && !waiting_for_roots())
    instructions =
        "Chock cannot serve: " + printable(failure) + ". Every request says so until it is set right.";
  Json answer = response(
      m.id, {{"protocolVersion", version},
             {"capabilities", {{"tools", {{"listChanged", false}}}, {"logging", Json::object()}}},
             {"serverInfo", {{"name", "chock"}, {"title", "Chock"}, {"version", CHOCK_VERSION_STRING}}},
             {"instructions", instructions}});
  if (settle_now) {
    // Sent before what settling sends (the failure's line, a sandbox begun).
    send(answer);
    settle(project(), failure);
    return nullptr;
  }
  return answer;
}

void Server::initialized() {
  {
    std::lock_guard lock(mutex_);
    if (!roots_pending_ || roots_asked_) return;
    roots_asked_ = true;
  }
  (void)outgoing_.ask("roots/list", Json::object(), [this](const std::optional<Json>& a) { take_roots(a); });
}

void Server::take_roots(const std::optional<Json>& answer) {
  {
    std::lock_guard lock(mutex_);
    if (ending_) return;  // the client left before it answered: nothing to serve
  }
  std::string chosen, uri;
  if (answer && answer->is_object() && answer->contains("roots") && (*answer)["roots"].is_array()) {
    for (const auto& root : (*answer)["roots"]) {
      if (!root.is_object() || !root.value("uri", Json()).is_string()) continue;
      const std::string path = path_of_uri(root["uri"].get<std::string>());
      if (path.empty() || !opens_as_directory(path)) continue;
      auto top = workspace::project_root(path);
      if (!top) continue;
      chosen = *top;
      uri = root["uri"].get<std::string>();
      break;
    }
  }
  std::string line;
  if (!chosen.empty()) {
    line = "serving " + printable(chosen) + ", the client's first root that is a directory Chock can open (" +
           printable(uri) + ")";
    settle(chosen, project_failure(o_, chosen), line);
    return;
  }
  const std::string here = project();
  line = "the client's roots hold no directory Chock can open" +
         (here.empty() ? std::string() : "; serving " + printable(here) + " (where the server started)");
  std::string failure;
  {
    std::lock_guard lock(mutex_);
    failure = failure_;
  }
  settle(here, failure, line);
}

void Server::settle(std::string project, std::string failure, const std::string& said) {
  std::vector<std::pair<Message, std::shared_ptr<Batch>>> replay;
  bool ending = false;
  {
    std::lock_guard lock(mutex_);
    project_ = std::move(project);
    failure_ = std::move(failure);
    roots_pending_ = false;
    settled_ = true;
    replay.swap(held_);
    ending = ending_;
  }
  if (!said.empty()) {
    std::fprintf(stderr, "chock: mcp: %s\n", said.c_str());
    log(said);
  }
  say_failure();
  if (ending) return;
  prepare_next();
  for (auto& [m, batch] : replay) dispatch(std::move(m), batch);
}

Json Server::handle_quick(const Message& m) {
  if (m.method == "initialize") return initialize(m);
  if (m.method == "ping") return response(m.id, Json::object());
  if (m.method == "logging/setLevel") {
    const Json level = m.params.is_object() ? m.params.value("level", Json()) : Json();
    if (!level.is_string() || log_severity(level) < 0)
      return error_response(
          m.id, code::invalid_params,
          "logging/setLevel's level is one of debug, info, notice, warning, error, critical, "
          "alert, emergency");
    std::lock_guard lock(mutex_);
    log_threshold_ = log_severity(level);
    return response(m.id, Json::object());
  }
  if (m.method == "tools/list") {
    auto table = policy_table();
    if (!table) return error_response(m.id, code::internal_error, table.error().message());
    Json tools = Json::array();
    for (const auto& t : tool_definitions())
      if (table->decide(tool_action(t["name"])).decision != policy::Decision::deny) tools.push_back(t);
    return response(m.id, {{"tools", tools}});
  }
  return error_response(m.id, code::method_not_found, "no such method: " + m.method);
}

}  // namespace chock::mcp
