// Chock's own requests to the MCP client, and the policy's questions asked
// through them. Under `chock mcp` and `chock mcp wrap` the person sits
// behind the client, not at a terminal: a rule that asks (net.connect,
// net.publish, memory.write, net.fetch, workspace.apply, ...) becomes an
// `elicitation/create` request when the client declared `elicitation`.
// Both faces (the server and the relay around a third-party server) ask
// through this layer.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "chock/session.hpp"
#include "mcp/jsonrpc.hpp"

namespace chock::mcp {

// Requests Chock sends to the client, each waiting for its answer. Ids are
// strings `prefix` + N; where a wrapped server asks the same client too, the
// prefix is made so that its ids cannot be taken for Chock's.
class Outgoing {
 public:
  // nullopt: an error answer, or none ever (the client left).
  using Answered = std::function<void(std::optional<Json>)>;
  explicit Outgoing(std::function<void(const Json&)> send, std::string prefix = "chock-")
      : send_(std::move(send)), prefix_(std::move(prefix)) {}
  // Sends `method` to the client; `then` runs on the thread that takes the
  // answer (at once with nullopt when the client is gone). Its id.
  std::string ask(const std::string& method, Json params, Answered then);
  // A message from the client: true when it answers one of ours (handled).
  bool take(const Message& m);
  // The answer is no longer awaited: forgotten, and the client told
  // (notifications/cancelled), so it can take its question down.
  void withdraw(const std::string& id, const std::string& reason);
  // The client is gone: what waits gets nullopt, and so will what is asked later.
  void end();

 private:
  std::function<void(const Json&)> send_;
  std::string prefix_;
  std::mutex mutex_;
  std::map<std::string, Answered> waiting_;  // by the id, dumped
  long count_ = 0;
  bool ended_ = false;
};

// One question of the policy, as the session engine's Hooks::Ask puts it.
struct Question {
  std::string action;  // "net.connect.com.example.443"
  std::string what;    // what would happen, escaped
  std::string during;  // the tool call it belongs to ("run_command (request 7)")
  bool offer_always = true;
};

// The elicitation/create parameters: a message naming the action, what
// would happen and the tool call, and one choice (yes, always for this
// session when offered, no).
[[nodiscard]] Json elicitation(const Question& q);
// The person's answer from the client's result (nullopt: no answer).
[[nodiscard]] session::Answer answer_of(const Question& q, const std::optional<Json>& result);

// Asks and waits for the answer. The wait ends with a no (and the question
// withdrawn) once `cancel_fd` is readable (the call is ending) or `moot()`
// says the tool call was cancelled; both are looked at every 100 ms.
[[nodiscard]] session::Answer ask_person(Outgoing& out, const Question& q, int cancel_fd,
                                         const std::function<bool()>& moot);

}  // namespace chock::mcp
