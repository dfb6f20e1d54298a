// Inside `chock mcp` (server.hpp): one process, requests served at once.
// The reader (the caller's thread) answers what is quick (initialize,
// ping, tools/list) itself; each tools/call runs on a thread of its own
// through the session engine (chock/session.hpp); notifications/cancelled
// cancels the call it names, whose answer is then never sent; the end of
// the client's input cancels every call and ends the server.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
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
#include "mcp/questions.hpp"
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

// The answers of one batch (protocol version 2025-03-26), sent as one JSON
// array once each of its requests is answered; a request the client
// cancelled has no answer, and an array with none is not sent.
// NOLINTNEXTLINE(bugprone-exception-escape): its Json allocates
struct Batch {
  std::mutex mutex;
  std::size_t waiting = 0;
  Json answers = Json::array();
};

// One tools/call while it is served.
// NOLINTNEXTLINE(bugprone-exception-escape): its Json, as every Message's, allocates
struct Flight {
  Json id;
  std::string tool;                    // its name
  Json progress_token;                 // null: the client asked for no progress
  std::shared_ptr<Batch> batch;        // the batch it came in, if any
  std::atomic<bool> cancelled{false};  // by the client: its answer is never sent
  std::mutex mutex;                    // guards what follows
  session::Call* call = nullptr;       // while a sandboxed call of it runs
  std::string last_line;               // what its program printed last, for progress
  std::uint64_t progress = 0;          // notifications sent
  // Ends its sandboxed call: asked by the client (no answer is sent), or the
  // server's own end (the answer says the call was cancelled).
  void cancel(bool by_client);
};

// Why `project`'s configuration layers cannot be read, or "".
[[nodiscard]] std::string project_failure(const ServerOptions& o, const std::string& project);

class Server {
 public:
  Server(const ServerOptions& o, int in, int out);
  int run();
  // It could never serve (its failure at start was never set right).
  [[nodiscard]] bool failed() const {
    std::lock_guard lock(mutex_);
    return !failure_.empty();
  }

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
  // The policy's questions of tool call `flight`, asked through the client;
  // unset when the client declared no elicitation (then a rule that asks is
  // a refusal naming the row to add).
  [[nodiscard]] session::Hooks::Ask person_ask(Flight& flight);
  // Chock's own line, also to the client as notifications/message (the
  // logging capability) when its level is at or above the client's.
  void log(const std::string& line);
  // The project served (from the options, or the client's first root).
  [[nodiscard]] std::string project() const;
  [[nodiscard]] bool client_can(const std::string& capability) const;
  [[nodiscard]] Expected<policy::Table> policy_table() const;
  [[nodiscard]] const ServerOptions& options() const { return o_; }

 private:
  using Answered = Outgoing::Answered;
  void take_line(const LineReader::Line& line);
  // A request's answer: sent, or kept for its batch's array.
  void answer(const std::shared_ptr<Batch>& batch, std::optional<Json> message);
  void answer_in(const std::shared_ptr<Batch>& batch, Json message);  // an answer that is not awaited
  void take_batch(Parsed p);
  // A sandbox begun for the next call (session::prepare), by the reader's
  // thread only; taken by the call that comes, begun anew once it ends.
  void prepare_next();
  [[nodiscard]] std::optional<Begun> take_prepared();
  void call_ended();
  void dispatch(Message m, const std::shared_ptr<Batch>& batch = nullptr);
  // The lifecycle (lifecycle.cpp): the error of a request that may not come
  // now (before initialize, a second initialize, a start that failed).
  std::optional<Json> out_of_turn(const Message& m);
  Json handle_quick(const Message& m);
  Json initialize(const Message& m);
  // notifications/initialized: the client's roots are asked for, if they choose the project.
  void initialized();
  void take_roots(const std::optional<Json>& answer);
  // The project is known for good (`said`: how it was chosen): what waited
  // for it is served.
  void settle(std::string project, std::string failure, const std::string& said = "");
  // The failure, once, on stderr.
  void say_failure();
  [[nodiscard]] bool waiting_for_roots() const;
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
  Json write_memory(const Json& args, Flight& flight);
  Json fetch_url(const Json& args, Flight& flight);
  Json apply(const Json& args, Flight& flight);
  // Chock's own lines of a command's stderr, each also logged to the client.
  std::vector<std::string> said(const Captured& err);
  [[nodiscard]] std::vector<std::string> layer_args() const;
  [[nodiscard]] std::vector<std::string> place() const;
  // A `chock` command of its own; its questions (if any) go to `ask`.
  [[nodiscard]] Expected<SelfResult> command(std::vector<std::string> args, const std::string& input = {},
                                             session::Hooks::Ask ask = nullptr) const;

  const ServerOptions& o_;
  LineReader in_;
  int in_fd_;
  int out_;
  UniqueFd prepare_event_;    // written when a call that took the prepared sandbox ends
  std::mutex out_mutex_;      // one message at a time on stdout
  mutable std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  Outgoing outgoing_;  // Chock's own requests to the client (roots, questions)
  std::string session_;
  bool making_session_ = false;
  Json client_capabilities_ = Json::object();
  std::map<std::string, std::shared_ptr<Flight>> flights_;  // by the id, dumped
  std::list<std::thread> workers_;
  bool ending_ = false;
  std::optional<Begun> next_;
  // The lifecycle.
  bool initialize_answered_ = false;
  std::string version_;    // negotiated
  int log_threshold_ = 1;  // "info": Chock's lines unless the client sets another level
  std::string project_;
  std::string failure_;         // why nothing but initialize and ping can be served
  bool roots_pending_ = false;  // the project waits for the client's roots
  bool roots_asked_ = false;
  bool settled_ = false;  // the project is known for good (not waiting for initialize or roots)
  bool failure_said_ = false;
  std::vector<std::pair<Message, std::shared_ptr<Batch>>> held_;  // requests that wait for the project
};

}  // namespace chock::mcp
