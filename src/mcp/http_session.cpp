#include "mcp/http_session.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "util/io.hpp"

namespace chock::mcp {

namespace {

constexpr std::size_t kMaxUnsent = 1000;  // messages kept for a stream not yet open

bool is_response(const Json& m) {
  return m.is_object() && m.contains("id") && !m.contains("method") &&
         (m.contains("result") || m.contains("error"));
}

void add_ids(const Json& message, std::set<std::string>& ids, std::set<std::string>& tokens) {
  if (!message.is_object() || !message.contains("method") || !message.contains("id") ||
      message["id"].is_null())
    return;
  ids.insert(message["id"].dump());
  const Json params = message.value("params", Json());
  if (params.is_object() && params.contains("_meta") && params["_meta"].is_object() &&
      params["_meta"].contains("progressToken"))
    tokens.insert(params["_meta"]["progressToken"].dump());
}

}  // namespace

HttpSession::HttpSession(std::string id, ServerOptions options)
    : id_(std::move(id)), options_(std::move(options)) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
    ended_ = true;
    return;
  }
  to_server_.reset(in[1]);
  from_server_.reset(out[0]);
  // The server's ends, owned by its thread: its output ends when it returns.
  server_ = std::thread([this, in_read = in[0], out_write = out[1]] {
    (void)serve(options_, in_read, out_write);
    ::close(in_read);
    ::close(out_write);
  });
  reader_ = std::thread([this] { read_server(); });
}

HttpSession::~HttpSession() {
  end();
  if (server_.joinable()) server_.join();
  if (reader_.joinable()) reader_.join();
}

void HttpSession::end() {
  std::lock_guard g(write_mutex_);
  to_server_.reset();
}

void HttpSession::write_server(const std::string& line) {
  std::lock_guard g(write_mutex_);
  if (to_server_) (void)write_all(to_server_.get(), line, "the session's server");
}

void HttpSession::read_server() {
  LineReader lines(from_server_.get());
  while (auto line = lines.next()) {
    if (line->too_long) continue;
    route(line->text);
  }
  std::lock_guard g(mutex_);
  ended_ = true;
  changed_.notify_all();
}

HttpSession::Stream* HttpSession::stream_for(const Json& message) {
  // An answer (or a batch of answers): the stream that waits for its id.
  const Json& first = message.is_array() && !message.empty() ? message[0] : message;
  if (is_response(first)) {
    for (Stream* s : posts_)
      if (s->ids.count(first["id"].dump()) != 0) return s;
    return nullptr;  // its client has gone
  }
  if (first.is_object() && first.value("method", Json()) == "notifications/progress") {
    const Json params = first.value("params", Json());
    if (params.is_object() && params.contains("progressToken"))
      for (Stream* s : posts_)
        if (s->tokens.count(params["progressToken"].dump()) != 0) return s;
  }
  for (auto it = posts_.rbegin(); it != posts_.rend(); ++it)
    if ((*it)->events && !(*it)->ids.empty()) return *it;
  return get_;
}

void HttpSession::route(const std::string& line) {
  const Json message = Json::parse(line, nullptr, false);
  if (message.is_discarded()) return;
  std::lock_guard g(mutex_);
  Stream* s = stream_for(message);
  if (s == nullptr) {
    if (!is_response(message.is_array() && !message.empty() ? message[0] : message) &&
        unsent_.size() < kMaxUnsent)
      unsent_.push_back(line);
    return;
  }
  if (message.is_array()) {
    for (const auto& m : message)
      if (is_response(m)) s->ids.erase(m["id"].dump());
  } else if (is_response(message)) {
    s->ids.erase(message["id"].dump());
  }
  s->queue.push_back(line);
  changed_.notify_all();
}

std::optional<std::chrono::steady_clock::time_point> HttpSession::idle_since() const {
  std::lock_guard g(mutex_);
  // An open GET stream alone does not count: a client that left without
  // DELETE may hold one until its connection is found gone.
  if (serving_ > 0) return std::nullopt;
  return used_;
}

// Counts a request as served while it is.
class HttpSession::Serving {
 public:
  explicit Serving(HttpSession& s) : s_(s) {
    std::lock_guard g(s_.mutex_);
    ++s_.serving_;
  }
  ~Serving() {
    std::lock_guard g(s_.mutex_);
    --s_.serving_;
    s_.used_ = std::chrono::steady_clock::now();
  }
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

 private:
  HttpSession& s_;
};

void HttpSession::post(const Json& body, bool events, const http::Headers& headers, http::Reply& reply) {
  const Serving serving(*this);
  Stream stream;
  stream.events = events;
  if (body.is_array()) {
    for (const auto& m : body) add_ids(m, stream.ids, stream.tokens);
  } else {
    add_ids(body, stream.ids, stream.tokens);
  }
  if (stream.ids.empty()) {
    write_server(serialize(body));
    (void)reply.send(202, headers, "");
    return;
  }
  std::unique_lock lock(mutex_);
  posts_.push_back(&stream);
  if (events) {
    // What waited for a stream goes out on this one first.
    for (auto& line : unsent_) stream.queue.push_back(std::move(line));
    unsent_.clear();
  }
  lock.unlock();
  write_server(serialize(body));
  if (events) (void)reply.start_events(headers);
  std::string answer;  // without events: the body, once every request has its answer
  lock.lock();
  for (;;) {
    changed_.wait(lock, [&] { return !stream.queue.empty() || stream.ids.empty() || ended_; });
    if (stream.queue.empty()) break;  // answered (or the session ended)
    std::string line = std::move(stream.queue.front());
    stream.queue.pop_front();
    lock.unlock();
    if (events) {
      if (!line.empty() && line.back() == '\n') line.pop_back();
      (void)reply.event(line);
    } else {
      answer = line;  // one request (a batch's answers come as one array)
    }
    lock.lock();
    if (!reply.alive()) break;
  }
  posts_.remove(&stream);
  lock.unlock();
  if (events) {
    (void)reply.end_events();
  } else {
    http::Headers h = headers;
    h.emplace_back("Content-Type", "application/json");
    if (!answer.empty() && answer.back() == '\n') answer.pop_back();
    (void)reply.send(answer.empty() ? 202 : 200, h, answer);
  }
}

bool HttpSession::listen(const http::Headers& headers, http::Reply& reply) {
  Stream stream;
  std::unique_lock lock(mutex_);
  if (get_ != nullptr) return false;
  get_ = &stream;
  for (auto& line : unsent_) stream.queue.push_back(std::move(line));
  unsent_.clear();
  lock.unlock();
  (void)reply.start_events(headers);
  lock.lock();
  while (reply.alive()) {
    // Woken now and then to learn whether the client is still there.
    changed_.wait_for(lock, std::chrono::seconds(15), [&] { return !stream.queue.empty() || ended_; });
    if (ended_ && stream.queue.empty()) break;
    if (stream.queue.empty()) {
      lock.unlock();
      (void)reply.event_comment();
      lock.lock();
      continue;
    }
    std::string line = std::move(stream.queue.front());
    stream.queue.pop_front();
    lock.unlock();
    if (!line.empty() && line.back() == '\n') line.pop_back();
    (void)reply.event(line);
    lock.lock();
  }
  get_ = nullptr;
  // What it still held waits for the next stream.
  for (auto& line : stream.queue) unsent_.push_back(std::move(line));
  lock.unlock();
  (void)reply.end_events();
  return true;
}

}  // namespace chock::mcp
