#include "mcp/server.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "mcp/server_impl.hpp"
#include "util/io.hpp"

namespace chock::mcp {

namespace {

// How long the end of the client's input waits for the calls it cancelled.
constexpr std::chrono::milliseconds kEndWait{1500};
// How often a call with a progress token is said to go on.
constexpr std::chrono::seconds kProgressEvery{1};

}  // namespace

void Capture::add(std::string_view bytes) {
  total += bytes.size();
  if (head.size() < cap) head.append(bytes.substr(0, cap - head.size()));
}

void Flight::cancel(bool by_client) {
  if (by_client) cancelled.store(true);
  std::lock_guard lock(mutex);
  if (call != nullptr) call->cancel();
}

Server::Server(const ServerOptions& o, int in, int out)
    : o_(o), in_(in), in_fd_(in), out_(out), session_(o.session) {
  prepare_event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
}

void Server::send(const Json& message) {
  const std::string line = serialize(message);
  std::lock_guard lock(out_mutex_);
  (void)write_all(out_, line, "stdout");
}

std::string Server::session() const {
  std::lock_guard lock(mutex_);
  return session_;
}

bool Server::client_can(const std::string& capability) const {
  std::lock_guard lock(mutex_);
  return client_capabilities_.contains(capability);
}

Expected<policy::Table> Server::policy_table() const {
  config::LayerOptions l = o_.layers;
  l.project_dir = o_.project;
  auto layers = config::load_layers(l);
  if (!layers) return std::move(layers).error();
  return layers->table;
}

void Server::take_line(const LineReader::Line& line) {
  if (line.too_long) {
    send(error_response(nullptr, code::invalid_request,
                        "the line is over " + std::to_string(kMaxLineBytes >> 20) + " MiB"));
    return;
  }
  Parsed p = parse_line(line.text);
  if (p.reply) send(*p.reply);
  if (p.message) dispatch(std::move(*p.message));
}

void Server::prepare_next() {
  {
    std::lock_guard lock(mutex_);
    if (next_ || ending_) return;
  }
  session::Request r;
  r.project = o_.project;
  r.org_bundle = o_.layers.org_bundle;
  r.policy_rules = o_.layers.policy_rules;
  auto begun = session::prepare(r);
  if (!begun) return;  // the call begins its own, and says what failed
  std::lock_guard lock(mutex_);
  if (!next_ && !ending_) next_ = std::move(*begun);
}

std::optional<Begun> Server::take_prepared() {
  std::lock_guard lock(mutex_);
  return std::exchange(next_, std::nullopt);
}

void Server::call_ended() {
  const std::uint64_t one = 1;
  (void)!::write(prepare_event_.get(), &one, sizeof one);
}

int Server::run() {
  std::thread progress([this] { progress_loop(); });
  // The next call's sandbox is begun here, by this thread, which outlives
  // every call (its first process is this thread's child), while the
  // client thinks; anew after each call that took it.
  prepare_next();
  for (bool open = true; open;) {
    pollfd p[2] = {{in_fd_, POLLIN, 0}, {prepare_event_.get(), POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents != 0) {
      std::uint64_t n = 0;
      (void)!::read(prepare_event_.get(), &n, sizeof n);
      prepare_next();
    }
    if (p[0].revents == 0) continue;
    open = in_.fill();
    while (auto line = in_.pop()) take_line(*line);
    if (!open)
      while (auto line = in_.next()) take_line(*line);
  }
  end_everything();
  progress.join();
  std::unique_lock lock(mutex_);
  // Every call was cancelled: each ends within moments, its sandbox with it.
  changed_.wait_for(lock, kEndWait, [this] { return workers_.empty(); });
  return workers_.empty() ? 0 : -1;
}

void Server::dispatch(Message m) {
  if (m.kind == Message::Kind::response) {
    std::lock_guard lock(mutex_);
    const auto asked = asked_.find(m.id.dump());
    if (asked == asked_.end()) return;
    asked->second.set_value(m.is_error() ? std::nullopt : std::optional<Json>(m.result));
    asked_.erase(asked);
    return;
  }
  if (m.kind == Message::Kind::notification) {
    if (m.method != "notifications/cancelled" || !m.params.is_object()) return;
    std::shared_ptr<Flight> f;
    {
      std::lock_guard lock(mutex_);
      const auto at = flights_.find(m.params.value("requestId", Json()).dump());
      if (at != flights_.end()) f = at->second;
    }
    if (f) f->cancel(true);
    return;
  }
  if (m.method != "tools/call") {
    send(handle_quick(m));
    return;
  }
  if (auto refused = refuse_call(m)) {
    send(*refused);
    return;
  }
  auto flight = std::make_shared<Flight>();
  flight->id = m.id;
  if (m.params.is_object() && m.params.contains("_meta") && m.params["_meta"].is_object())
    flight->progress_token = m.params["_meta"].value("progressToken", Json());
  std::lock_guard lock(mutex_);
  flights_[m.id.dump()] = flight;
  workers_.emplace_back();
  auto me = std::prev(workers_.end());
  *me = std::thread([this, flight, m = std::move(m), me]() mutable {
    serve_call(flight, std::move(m));
    std::lock_guard done(mutex_);
    me->detach();
    workers_.erase(me);
    changed_.notify_all();
  });
}

Json Server::handle_quick(const Message& m) {
  if (m.method == "initialize") {
    if (!m.params.is_object())
      return error_response(m.id, code::invalid_params, "initialize takes an object");
    {
      std::lock_guard lock(mutex_);
      client_capabilities_ = m.params.value("capabilities", Json::object());
      if (!client_capabilities_.is_object()) client_capabilities_ = Json::object();
    }
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
  return error_response(m.id, code::method_not_found, "no such method: " + m.method);
}

std::optional<Json> Server::refuse_call(const Message& m) {
  if (!m.params.is_object() || !m.params.value("name", Json()).is_string())
    return error_response(m.id, code::invalid_params, "tools/call takes {name, arguments}");
  const std::string name = m.params["name"];
  const Json args = m.params.value("arguments", Json::object());
  if (!args.is_null() && !args.is_object())
    return error_response(m.id, code::invalid_params, "arguments is an object");
  bool known = false;
  for (const auto& t : tool_definitions()) known = known || t["name"] == name;
  if (!known) return error_response(m.id, code::invalid_params, "no such tool: " + name);
  auto table = policy_table();
  if (!table) return error_response(m.id, code::internal_error, table.error().message());
  if (const policy::Answer a = table->decide(tool_action(name)); a.decision == policy::Decision::deny)
    return error_response(m.id, code::invalid_params,
                          "the tool " + name + " is denied by the policy (" + tool_action(name) + " = deny" +
                              (a.deciding_rule ? " at " + a.deciding_rule->origin : std::string()) + ")");
  return std::nullopt;
}

void Server::serve_call(const std::shared_ptr<Flight>& flight, Message m) {
  Json args = m.params.value("arguments", Json::object());
  if (args.is_null()) args = Json::object();
  const Json answer = response(m.id, call_tool(m.params["name"], args, *flight));
  {
    std::lock_guard lock(mutex_);
    flights_.erase(m.id.dump());
  }
  // A request the client cancelled is never answered (it has stopped waiting).
  if (!flight->cancelled.load()) send(answer);
}

void Server::progress_loop() {
  std::unique_lock lock(mutex_);
  auto next = std::chrono::steady_clock::now() + kProgressEvery;
  while (!ending_) {
    if (changed_.wait_until(lock, next, [this] { return ending_; })) return;
    if (std::chrono::steady_clock::now() < next) continue;
    next += kProgressEvery;
    std::vector<std::shared_ptr<Flight>> going;
    for (const auto& [id, f] : flights_)
      if (!f->progress_token.is_null() && !f->cancelled.load()) going.push_back(f);
    lock.unlock();
    for (const auto& f : going) {
      Json params;
      {
        std::lock_guard g(f->mutex);
        params = {{"progressToken", f->progress_token}, {"progress", ++f->progress}};
        if (!f->last_line.empty()) params["message"] = f->last_line;
      }
      send(notification("notifications/progress", std::move(params)));
    }
    lock.lock();
  }
}

void Server::end_everything() {
  std::lock_guard lock(mutex_);
  ending_ = true;
  next_.reset();  // its first process hears there is no call, and ends
  for (auto& [id, f] : flights_) f->cancel(false);
  // Questions to a client that is gone are never answered.
  for (auto& [id, p] : asked_) p.set_value(std::nullopt);
  asked_.clear();
  changed_.notify_all();
}

std::optional<Json> Server::ask_client(const std::string& method, Json params) {
  std::future<std::optional<Json>> answer;
  std::string id;
  {
    std::lock_guard lock(mutex_);
    if (ending_) return std::nullopt;
    id = "chock-" + std::to_string(++asked_count_);
    answer = asked_[Json(id).dump()].get_future();
  }
  send(request(id, method, std::move(params)));
  return answer.get();
}

int serve(const ServerOptions& options, int in, int out) {
  ::signal(SIGPIPE, SIG_IGN);  // a client gone is seen as a failed write
  // Kept past the return where a call did not end in time: its thread still
  // reads it, and the process is about to end.
  auto* s = new Server(options, in, out);
  const int status = s->run();
  if (status == 0) delete s;
  return 0;
}

}  // namespace chock::mcp
