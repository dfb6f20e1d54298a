#include "mcp/questions.hpp"

#include <poll.h>

#include <chrono>
#include <future>
#include <memory>
#include <utility>

namespace chock::mcp {

namespace {

constexpr const char* kYes = "yes";
constexpr const char* kAlways = "always for this session";
constexpr const char* kNo = "no";

// The file descriptor is readable now (or was closed: the same to us).
bool readable(int fd) {
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

}  // namespace

std::string Outgoing::ask(const std::string& method, Json params, Answered then) {
  std::unique_lock lock(mutex_);
  if (ended_) {
    lock.unlock();
    then(std::nullopt);
    return {};
  }
  std::string id = prefix_ + std::to_string(++count_);
  waiting_[Json(id).dump()] = std::move(then);
  lock.unlock();
  send_(request(id, method, std::move(params)));
  return id;
}

bool Outgoing::take(const Message& m) {
  if (m.kind != Message::Kind::response) return false;
  Answered then;
  {
    std::lock_guard lock(mutex_);
    const auto at = waiting_.find(m.id.dump());
    if (at == waiting_.end()) return false;
    then = std::move(at->second);
    waiting_.erase(at);
  }
  then(m.is_error() ? std::nullopt : std::optional<Json>(m.result));
  return true;
}

void Outgoing::withdraw(const std::string& id, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (waiting_.erase(Json(id).dump()) == 0 || ended_) return;
  }
  send_(notification("notifications/cancelled", {{"requestId", id}, {"reason", reason}}));
}

void Outgoing::end() {
  std::map<std::string, Answered> waiting;
  {
    std::lock_guard lock(mutex_);
    ended_ = true;
    waiting.swap(waiting_);
  }
  for (auto& [id, then] : waiting) then(std::nullopt);
}

Json elicitation(const Question& q) {
  Json choices = Json::array({kYes});
  if (q.offer_always) choices.push_back(kAlways);
  choices.push_back(kNo);
  std::string message =
      "Chock asks, for " + q.during + ": " + q.what + "\nThe policy's row " + q.action + " asks. Go ahead?";
  return {{"message", std::move(message)},
          {"requestedSchema",
           {{"type", "object"},
            {"properties",
             {{"answer",
               {{"type", "string"}, {"title", "Go ahead?"}, {"description", q.action}, {"enum", choices}}}}},
            {"required", {"answer"}}}}};
}

session::Answer answer_of(const Question& q, const std::optional<Json>& result) {
  const std::string through = " (asked through the MCP client, for " + q.action + ")";
  if (!result || !result->is_object()) return {false, false, "the client gave no answer" + through};
  const Json action = result->value("action", Json());
  if (action == "decline") return {false, false, "the person declined" + through};
  if (action != "accept") return {false, false, "the person dismissed the question" + through};
  const Json content = result->value("content", Json());
  const Json said = content.is_object() ? content.value("answer", Json()) : Json();
  if (said == kYes) return {true, false, ""};
  if (q.offer_always && said == kAlways) return {true, true, ""};
  return {false, false, "the person answered no" + through};
}

session::Answer ask_person(Outgoing& out, const Question& q, int cancel_fd,
                           const std::function<bool()>& moot) {
  auto answered = std::make_shared<std::promise<std::optional<Json>>>();
  auto answer = answered->get_future();
  const std::string id = out.ask("elicitation/create", elicitation(q),
                                 [answered](const std::optional<Json>& a) { answered->set_value(a); });
  while (answer.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready) {
    if (readable(cancel_fd) || (moot && moot())) {
      out.withdraw(id, "the tool call ended before the person answered");
      return {false, false, "the call was ending before the question was answered"};
    }
  }
  return answer_of(q, answer.get());
}

}  // namespace chock::mcp
