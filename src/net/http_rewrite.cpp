#include "net/http_rewrite.hpp"

#include <llhttp.h>

namespace chock::net {

namespace {

enum class Paused { none, head, message };

}  // namespace

struct RequestParser {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  Paused paused = Paused::none;
};

namespace {

RequestParser& owner(llhttp_t* p) {
  return *static_cast<RequestParser*>(p->data);
}

// Each end pauses the parser, so that where it stopped is where a head or a
// message ends in the bytes given.
int headers_complete(llhttp_t* p) {
  owner(p).paused = Paused::head;
  return HPE_PAUSED;
}

int message_complete(llhttp_t* p) {
  owner(p).paused = Paused::message;
  return HPE_PAUSED;
}

}  // namespace

RequestRewriter::RequestRewriter(std::vector<Swap> swaps)
    : swaps_(std::move(swaps)), parser_(std::make_unique<RequestParser>()) {
  llhttp_settings_init(&parser_->settings);
  parser_->settings.on_headers_complete = headers_complete;
  parser_->settings.on_message_complete = message_complete;
  llhttp_init(&parser_->parser, HTTP_REQUEST, &parser_->settings);
  parser_->parser.data = parser_.get();
}

RequestRewriter::~RequestRewriter() = default;

void RequestRewriter::end_head(std::string& out) {
  for (const auto& s : swaps_) {
    if (s.sentinel.empty()) continue;
    for (auto at = head_.find(s.sentinel); at != std::string::npos;
         at = head_.find(s.sentinel, at + s.secret.size())) {
      head_.replace(at, s.sentinel.size(), s.secret);
      ++swapped_;
    }
  }
  out += head_;
  head_.clear();
  in_head_ = false;
}

Expected<std::string> RequestRewriter::feed(std::string_view in) {
  std::string out;
  while (!in.empty()) {
    if (upgraded_) {
      out.append(in);
      break;
    }
    parser_->paused = Paused::none;
    const llhttp_errno_t e = llhttp_execute(&parser_->parser, in.data(), in.size());
    std::size_t used = in.size();
    if (e == HPE_PAUSED || e == HPE_PAUSED_UPGRADE)
      used = static_cast<std::size_t>(llhttp_get_error_pos(&parser_->parser) - in.data());
    else if (e != HPE_OK)
      return Error{std::string("the request is not HTTP/1.1 (") + llhttp_errno_name(e) + ": " +
                       llhttp_get_error_reason(&parser_->parser) + ")",
                   "", EPROTO};
    (in_head_ ? head_ : out).append(in.substr(0, used));
    in.remove_prefix(used);
    if (in_head_ && head_.size() > kMaxHead)
      return Error{"a request's head is longer than " + std::to_string(kMaxHead) + " bytes", "", EMSGSIZE};
    if (e == HPE_PAUSED_UPGRADE) {
      if (in_head_) end_head(out);
      upgraded_ = true;
      continue;
    }
    if (e != HPE_PAUSED) continue;
    if (parser_->paused == Paused::head) end_head(out);
    if (parser_->paused == Paused::message) in_head_ = true;
    llhttp_resume(&parser_->parser);
  }
  return out;
}

}  // namespace chock::net
