// One client session of `chock mcp --http` (http_transport.hpp): a Server
// on a thread of its own, fed through a pipe, and the routing of what it
// writes to the HTTP streams that wait for it. An answer goes to the stream
// of the POST that carried its request; a progress notification to the
// stream whose request gave its token; anything else (log lines, the
// server's own requests, such as a question for the person) to the newest
// POST stream still waiting for an answer, else to the GET stream, else it
// waits for the next stream to open.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "mcp/http_server.hpp"
#include "mcp/jsonrpc.hpp"
#include "mcp/server.hpp"
#include "util/fd.hpp"

namespace chock::mcp {

class HttpSession {
 public:
  HttpSession(std::string id, ServerOptions options);
  ~HttpSession();
  HttpSession(const HttpSession&) = delete;
  HttpSession& operator=(const HttpSession&) = delete;

  [[nodiscard]] const std::string& id() const { return id_; }
  // No POST of it is being answered: when it was last used, else nullopt.
  [[nodiscard]] std::optional<std::chrono::steady_clock::time_point> idle_since() const;
  // A POST of `body`: its requests' answers (and what the server says
  // meanwhile, when `events`) on `reply`, which it ends; a body of only
  // notifications and responses is answered 202 at once.
  void post(const Json& body, bool events, const http::Headers& headers, http::Reply& reply);
  // A GET: an event stream of what belongs to no request, until the
  // session or the client ends. False: one is open already.
  bool listen(const http::Headers& headers, http::Reply& reply);
  // DELETE, or the process's end: the server's input closes, every call of
  // it is cancelled, and every stream ends.
  void end();

 private:
  struct Stream {
    std::set<std::string> ids;     // the requests it waits for (dumped)
    std::set<std::string> tokens;  // their progress tokens (dumped)
    bool events = true;            // takes messages besides its answers
    std::deque<std::string> queue;
  };
  class Serving;
  void read_server();
  void route(const std::string& line);
  Stream* stream_for(const Json& message);
  void write_server(const std::string& line);

  std::string id_;
  ServerOptions options_;  // the server holds a reference to it
  UniqueFd to_server_, from_server_;
  std::mutex write_mutex_;
  mutable std::mutex mutex_;  // guards what follows
  std::condition_variable changed_;
  std::list<Stream*> posts_;  // open, the newest last
  Stream* get_ = nullptr;
  std::deque<std::string> unsent_;  // for the next stream that opens
  bool ended_ = false;              // the server's output has ended
  int serving_ = 0;                 // requests being answered
  std::chrono::steady_clock::time_point used_ = std::chrono::steady_clock::now();
  std::thread server_, reader_;
};

}  // namespace chock::mcp
