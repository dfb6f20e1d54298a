#include "mcp/server.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <utility>

#include "mcp/schema.hpp"
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
    : o_(o),
      in_(in),
      in_fd_(in),
      out_(out),
      outgoing_([this](const Json& message) { send(message); }),
      session_(o.session),
      project_(o.project),
      failure_(o.failure),
      settled_(!o.project_from_roots) {
  prepare_event_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  // A chock.zon that cannot be read is said to the client like any other failure at start.
  if (failure_.empty() && !project_.empty()) failure_ = project_failure(o_, project_);
  // Said at once, unless a root of the client may still set it right.
  if (settled_) say_failure();
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
  l.project_dir = project();
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
  if (p.batch) {
    take_batch(std::move(p));
    return;
  }
  if (p.reply) send(*p.reply);
  if (p.message) dispatch(std::move(*p.message));
}

void Server::take_batch(Parsed p) {
  std::string version;
  {
    std::lock_guard lock(mutex_);
    version = version_;
  }
  if (version != kBatchVersion) {
    send(error_response(
        nullptr, code::invalid_request,
        "a batch (JSON array) is not accepted " +
            (version.empty() ? std::string("before initialize")
                             : "in protocol version " + version + " (only in " + kBatchVersion + ")") +
            ": one message a line"));
    return;
  }
  auto batch = std::make_shared<Batch>();
  batch->waiting = 1;  // its own hold, so that no early answer sends the array
  for (auto& item : p.items) {
    if (item.reply) answer_in(batch, std::move(*item.reply));
    if (!item.message) continue;
    const bool request = item.message->kind == Message::Kind::request;
    if (request) {
      std::lock_guard g(batch->mutex);
      ++batch->waiting;
    }
    dispatch(std::move(*item.message), request ? batch : nullptr);
  }
  answer(batch, std::nullopt);
}

void Server::answer_in(const std::shared_ptr<Batch>& batch, Json message) {
  std::lock_guard g(batch->mutex);
  batch->answers.push_back(std::move(message));
}

void Server::answer(const std::shared_ptr<Batch>& batch, std::optional<Json> message) {
  if (!batch) {
    if (message) send(*message);
    return;
  }
  Json all;
  {
    std::lock_guard g(batch->mutex);
    if (message) batch->answers.push_back(std::move(*message));
    if (--batch->waiting != 0) return;
    all = std::move(batch->answers);
  }
  // JSON-RPC: a batch of notifications only is answered with nothing.
  if (!all.empty()) send(all);
}

void Server::prepare_next() {
  {
    std::lock_guard lock(mutex_);
    if (next_ || ending_ || !settled_ || !failure_.empty()) return;
  }
  session::Request r;
  r.project = project();
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
  say_failure();  // where the client never came to choose a project
  progress.join();
  std::unique_lock lock(mutex_);
  // Every call was cancelled: each ends within moments, its sandbox with it.
  changed_.wait_for(lock, kEndWait, [this] { return workers_.empty(); });
  return workers_.empty() ? 0 : -1;
}

void Server::dispatch(Message m, const std::shared_ptr<Batch>& batch) {
  if (m.kind == Message::Kind::response) {
    (void)outgoing_.take(m);  // an answer to nothing asked is dropped
    return;
  }
  if (m.kind == Message::Kind::notification) {
    if (m.method == "notifications/initialized") initialized();
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
  if (auto refused = out_of_turn(m)) {
    answer(batch, std::move(*refused));
    return;
  }
  if (m.method != "initialize" && m.method != "ping" && m.method != "logging/setLevel" &&
      waiting_for_roots()) {
    // Served once the client's roots have chosen the project; asked now if
    // the client has not said it is initialized.
    {
      std::lock_guard lock(mutex_);
      held_.emplace_back(std::move(m), batch);
    }
    initialized();
    return;
  }
  if (m.method != "tools/call") {
    Json quick = handle_quick(m);
    if (!quick.is_null()) answer(batch, std::move(quick));  // null: initialize sent its own
    return;
  }
  if (auto refused = refuse_call(m)) {
    answer(batch, std::move(*refused));
    return;
  }
  auto flight = std::make_shared<Flight>();
  flight->id = m.id;
  if (m.params.is_object() && m.params.value("name", Json()).is_string()) flight->tool = m.params["name"];
  flight->batch = batch;
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

std::optional<Json> Server::refuse_call(const Message& m) {
  if (!m.params.is_object() || !m.params.value("name", Json()).is_string())
    return error_response(m.id, code::invalid_params, "tools/call takes {name, arguments}");
  const std::string name = m.params["name"];
  const Json args = m.params.value("arguments", Json::object());
  if (!args.is_null() && !args.is_object())
    return error_response(m.id, code::invalid_params, "arguments is an object");
  Json definition;
  for (const auto& t : tool_definitions())
    if (t["name"] == name) definition = t;
  if (definition.is_null()) return error_response(m.id, code::invalid_params, "no such tool: " + name);
  auto table = policy_table();
  if (!table) return error_response(m.id, code::internal_error, table.error().message());
  if (const policy::Answer a = table->decide(tool_action(name)); a.decision == policy::Decision::deny)
    return error_response(m.id, code::invalid_params,
                          "the tool " + name + " is denied by the policy (" + tool_action(name) + " = deny" +
                              (a.deciding_rule ? " at " + a.deciding_rule->origin : std::string()) + ")");
  // The arguments as the published inputSchema says: a tool error naming the
  // field, so that a model can correct its call.
  if (auto bad = schema::check(definition["inputSchema"], args.is_null() ? Json::object() : args))
    return response(
        m.id, {{"content",
                Json::array({{{"type", "text"},
                              {"text", name + ": " + *bad + " (as its inputSchema in tools/list says)"}}})},
               {"isError", true}});
  return std::nullopt;
}

void Server::serve_call(const std::shared_ptr<Flight>& flight, Message m) {
  Json args = m.params.value("arguments", Json::object());
  if (args.is_null()) args = Json::object();
  Json result = response(m.id, call_tool(m.params["name"], args, *flight));
  {
    std::lock_guard lock(mutex_);
    flights_.erase(m.id.dump());
  }
  // A request the client cancelled is never answered (it has stopped waiting).
  answer(flight->batch, flight->cancelled.load() ? std::nullopt : std::optional<Json>(std::move(result)));
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
  // Questions to a client that is gone are never answered.
  {
    std::lock_guard lock(mutex_);
    ending_ = true;
  }
  outgoing_.end();
  std::lock_guard lock(mutex_);
  ending_ = true;
  next_.reset();  // its first process hears there is no call, and ends
  for (auto& [id, f] : flights_) f->cancel(false);
  changed_.notify_all();
}

int serve(const ServerOptions& options, int in, int out) {
  ::signal(SIGPIPE, SIG_IGN);  // a client gone is seen as a failed write
  // Kept past the return where a call did not end in time: its thread still
  // reads it, and the process is about to end.
  auto* s = new Server(options, in, out);
  const int status = s->run();
  const bool failed = s->failed();
  if (status == 0) delete s;
  return failed ? 2 : 0;
}

int serve_failure(const std::string& reason, int in, int out) {
  ServerOptions o;
  o.failure = reason;
  serve(o, in, out);
  return 125;
}

}  // namespace chock::mcp
