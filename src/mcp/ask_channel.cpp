#include "mcp/ask_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <vector>

#include "mcp/jsonrpc.hpp"
#include "util/json.hpp"

namespace chock::mcp {

namespace {

// Bigger than any question: what is cut to kMaxQuestionBytes, escaped.
constexpr std::size_t kMaxMessage = 256U << 10;

std::optional<Json> receive(int fd) {
  std::vector<char> buf(kMaxMessage);
  for (;;) {
    const ssize_t n = ::recv(fd, buf.data(), buf.size(), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    auto j = parse_json(std::string_view(buf.data(), static_cast<std::size_t>(n)));
    if (!j || !j->is_object()) return std::nullopt;
    return *j;
  }
}

// A boolean field, or `otherwise` when absent or of another type.
bool flag(const Json& j, const char* key, bool otherwise) {
  const auto at = j.find(key);
  return at != j.end() && at->is_boolean() ? at->get<bool>() : otherwise;
}

bool send_message(int fd, const Json& j) {
  const std::string bytes = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  for (;;) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(bytes.size());
  }
}

}  // namespace

UniqueFd take_ask_channel() {
  const char* value = std::getenv(kAskChannelVariable);
  if (value == nullptr) return {};
  char* end = nullptr;
  const long fd = std::strtol(value, &end, 10);
  ::unsetenv(kAskChannelVariable);
  if (end == value || *end != '\0' || fd < 3 || fd > 1023) return {};
  struct stat st {};
  int type = 0;
  socklen_t len = sizeof type;
  if (::fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode) ||
      ::getsockopt(static_cast<int>(fd), SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_SEQPACKET)
    return {};
  ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return UniqueFd(static_cast<int>(fd));
}

session::Answer ask_over(int channel, const std::string& action, const std::string& what, bool offer_always,
                         int cancel_fd) {
  std::string said = what.size() > kMaxQuestionBytes ? what.substr(0, kMaxQuestionBytes) + "\n[...]" : what;
  if (!send_message(channel, {{"action", action}, {"what", said}, {"offer_always", offer_always}}))
    return {false, false, action + " asks, and the question could not reach chock mcp"};
  for (;;) {
    pollfd p[2] = {{channel, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    if (::poll(p, cancel_fd >= 0 ? 2 : 1, -1) < 0) {
      if (errno == EINTR) continue;
      return {false, false, "no answer was given"};
    }
    if (cancel_fd >= 0 && p[1].revents != 0)
      return {false, false, "the call was ending before the question was answered"};
    if (p[0].revents != 0) break;
  }
  const std::optional<Json> a = receive(channel);
  if (!a) return {false, false, action + " asks, and chock mcp gave no answer"};
  const bool approved = flag(*a, "approved", false);
  const Json refusal = a->value("refusal", Json());
  return {approved, approved && offer_always && flag(*a, "always", false),
          approved              ? std::string()
          : refusal.is_string() ? refusal.get<std::string>()
                                : "the person answered no"};
}

bool answer_one(int channel, const session::Hooks::Ask& ask) {
  const std::optional<Json> q = receive(channel);
  if (!q) return false;
  const Json action = q->value("action", Json());
  const Json what = q->value("what", Json());
  session::Answer a;
  if (!action.is_string() || !what.is_string())
    a.refusal = "the question was not readable";
  else
    a = ask(action, what, flag(*q, "offer_always", true), -1);
  return send_message(channel, {{"approved", a.approved}, {"always", a.always}, {"refusal", a.refusal}});
}

}  // namespace chock::mcp
