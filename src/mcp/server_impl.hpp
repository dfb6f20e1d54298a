// Inside `chock mcp` (server.hpp): one process, requests served at once.
// The reader (the caller's thread) answers what is quick (initialize,
// ping, tools/list) itself; each tools/call runs on a thread of its own
// through the session engine (chock/session.hpp); notifications/cancelled
// cancels the call it names, whose answer is then never sent; the end of
// the client's input cancels every call and ends the server.
#pragma once

#include <atomic>
#include <condition_variable>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "chock/session.hpp"
#include "mcp/jsonrpc.hpp"
#include "mcp/self_call.hpp"
#include "mcp/server.hpp"
#include "policy/policy.hpp"
#include "util/fd.hpp"

namespace chock::mcp {

// The first bytes of a stream, and how many there were in all.
struct Capture {
  std::string head;
  std::uint64_t total = 0;
  std::size_t cap = 0;
  void add(std::string_view bytes);
  [[nodiscard]] std::uint64_t cut() const { return total - head.size(); }
};

// One tools/call while it is served.
// NOLINTNEXTLINE(bugprone-exception-escape): its Json, as every Message's, allocates
struct Flight {
  Json id;
  Json progress_token;                 // null: the client asked for no progress
  std::atomic<bool> cancelled{false};  // by the client: its answer is never sent
  std::mutex mutex;                    // guards what follows
  session::Call* call = nullptr;       // while a sandboxed call of it runs
  std::string last_line;               // what its program printed last, for progress
  std::uint64_t progress = 0;          // notifications sent
  // Ends its sandboxed call: asked by the client (no answer is sent), or the
  // server's own end (the answer says the call was cancelled).
  void cancel(bool by_client);
};

class Server {
 public:
  Server(const ServerOptions& o, int in, int out);
  int run();

  // ---- for the tools (tools.cpp) ----
  void send(const Json& message);
  // The session the tools run in: "" until the first call makes it.
  [[nodiscard]] std::string session() const;
  // A sandboxed call in the session (made by the first, and kept), its
  // program's output and Chock's lines captured; registered with `flight`
  // so that a cancel reaches it.
  struct Ran {
    Capture out, err;
    std::vector<std::string> lines;  // Chock's own
    session::Outcome outcome;
  };
  Expected<Ran> run_in_session(session::Request request, Flight& flight, std::size_t cap);
  // Asks the client (elicitation); nullopt when it cannot or did not answer.
  std::optional<Json> ask_client(const std::string& method, Json params);
  [[nodiscard]] bool client_can(const std::string& capability) const;
  [[nodiscard]] Expected<policy::Table> policy_table() const;
  [[nodiscard]] const ServerOptions& options() const { return o_; }

 private:
  void take_line(const LineReader::Line& line);
  // A sandbox begun for the next call (session::prepare), by the reader's
  // thread only; taken by the call that comes, begun anew once it ends.
  void prepare_next();
  [[nodiscard]] std::optional<Begun> take_prepared();
  void call_ended();
  void dispatch(Message m);
  Json handle_quick(const Message& m);
  // The error answer of a tools/call that cannot be served, checked before
  // it runs (so that it is answered in order); nullopt when it can.
  std::optional<Json> refuse_call(const Message& m);
  void serve_call(const std::shared_ptr<Flight>& flight, Message m);
  Json call_tool(const std::string& name, const Json& args, Flight& flight);
  void progress_loop();
  void end_everything();
  // The tools (tools.cpp).
  Json run_command(const Json& args, Flight& flight);
  Json task_output(const Json& args);
  Json file_call(const std::string& name, const Json& args, Flight& flight);
  Json workspace_status(Flight& flight);
  Json read_memory(const Json& args);
  Json write_memory(const Json& args);
  Json fetch_url(const Json& args);
  Json apply(const Json& args);
  [[nodiscard]] std::vector<std::string> layer_args() const;
  [[nodiscard]] std::vector<std::string> place() const;
  [[nodiscard]] Expected<SelfResult> command(std::vector<std::string> args,
                                             const std::string& input = {}) const;

  const ServerOptions& o_;
  LineReader in_;
  int in_fd_;
  int out_;
  UniqueFd prepare_event_;    // written when a call that took the prepared sandbox ends
  std::mutex out_mutex_;      // one message at a time on stdout
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::string session_;
  bool making_session_ = false;
  Json client_capabilities_ = Json::object();
  std::map<std::string, std::shared_ptr<Flight>> flights_;  // by the id, dumped
  std::list<std::thread> workers_;
  std::map<std::string, std::promise<std::optional<Json>>> asked_;
  long asked_count_ = 0;
  bool ending_ = false;
  std::optional<Begun> next_;
};

}  // namespace chock::mcp
