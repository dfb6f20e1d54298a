// The judge (chock/net.hpp): policy first, then Chock's own lookup, then
// the address rules, then a dial of an address that passed them. The order
// is the defence: a refused name never reaches a name server, and the
// address dialled is the one that was checked.
#include <unistd.h>

#include <algorithm>

#include "chock/net.hpp"

namespace chock::net {

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

nlohmann::json texts(const std::vector<sockaddr_storage>& addresses) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& a : addresses) out.push_back(address_text(a));
  return out;
}

}  // namespace

Judge::Judge(RuleFn rule, JudgeOptions options)
    : rule_(std::move(rule)), options_(std::move(options)), own_(own_addresses()) {}

namespace {

// What ends a question the rule may put to the person: the connection's
// cancel (its call is ending), for the thread that asks.
thread_local int g_rule_cancel_fd = -1;

}  // namespace

int rule_cancel_fd() noexcept {
  return g_rule_cancel_fd;
}

Verdict Judge::judge(const Host& host, std::string action, int cancel_fd) {
  Verdict v;
  v.action = std::move(action);
  g_rule_cancel_fd = cancel_fd;
  v.ruling = rule(v.action);
  g_rule_cancel_fd = -1;
  if (!v.ruling.allowed) {
    v.refusal = !v.ruling.refusal.empty() ? v.ruling.refusal : v.action + " is " + v.ruling.decision;
    return v;
  }
  const auto start = std::chrono::steady_clock::now();
  Expected<std::vector<sockaddr_storage>> found = std::vector<sockaddr_storage>{};
  bool cached = false;
  if (options_.lookup_once && host.kind == Host::Kind::name) {
    std::lock_guard lock(lookup_mutex_);
    if (auto it = looked_up_.find(host.text); it != looked_up_.end()) {
      found = it->second;
      cached = true;
    }
  }
  if (!cached) {
    found = resolve(host, options_.resolve_deadline, cancel_fd);
    if (found && options_.lookup_once && host.kind == Host::Kind::name) {
      std::lock_guard lock(lookup_mutex_);
      looked_up_.emplace(host.text, *found);
    }
  }
  v.resolved = host.kind == Host::Kind::name && !cached;
  v.resolve_ms = ms_since(start);
  if (!found) {
    v.refusal = found.error().message();
    return v;
  }
  for (const auto& a : *found) {
    if (auto why = refusal(a, options_.allowed_private, own_))
      v.refused_addresses.push_back(address_text(a) + ": " + *why);
    else
      v.addresses.push_back(a);
  }
  if (v.addresses.empty()) {
    v.refusal = host.text + " is refused: it resolves only to addresses Chock never dials (";
    for (std::size_t i = 0; i < v.refused_addresses.size(); ++i)
      v.refusal += (i == 0 ? "" : "; ") + v.refused_addresses[i];
    v.refusal += ")";
    return v;
  }
  v.allowed = true;
  return v;
}

Ruling Judge::rule(const std::string& action) {
  std::lock_guard lock(rule_mutex_);
  return rule_(action);
}

Ruling Judge::judge_name(const Host& host) {
  if (options_.name_rule) {
    std::lock_guard lock(rule_mutex_);
    return options_.name_rule(host);
  }
  Ruling r = rule(connect_action(host, 0));
  // `ask` is answered at the connect, where the port is known.
  if (r.decision == "ask") r.allowed = true;
  return r;
}

Verdict Judge::judge_connect(const Host& host, std::uint16_t port) {
  return judge(host, connect_action(host, port));
}

Verdict Judge::judge_fetch(const Host& host) {
  return judge(host, fetch_action(host));
}

Expected<Connection> Judge::connect(const Host& host, std::uint16_t port, int cancel_fd) {
  const auto start = std::chrono::steady_clock::now();
  Verdict v = judge(host, connect_action(host, port), cancel_fd);
  nlohmann::json event = {{"name", host.text},
                          {"port", port},
                          {"action", v.action},
                          {"decision", v.ruling.decision},
                          {"rule", v.ruling.rule},
                          {"resolved", v.resolved},
                          {"addresses", texts(v.addresses)}};
  if (!v.refused_addresses.empty()) event["addresses_refused"] = v.refused_addresses;
  if (!v.allowed) {
    event["refused"] = v.refusal;
    event["duration_ms"] = ms_since(start);
    record("net.connect", event);
    tally(host.text, false, 0, 0);
    return Error{v.refusal, ""};
  }
  Error last{"connect", host.text};
  for (const auto& a : v.addresses) {
    auto fd = dial(a, port, options_.connect_deadline, cancel_fd);
    if (!fd) {
      last = fd.error();
      continue;
    }
    Connection c;
    c.judge_ = this;
    c.fd_ = *fd;
    c.address_ = a;
    c.opened_ = start;
    event["address"] = address_text(a);
    c.event_ = std::move(event);
    return c;
  }
  event["error"] = last.message();
  event["duration_ms"] = ms_since(start);
  record("net.connect", event);
  tally(host.text, false, 0, 0);
  return last;
}

void Judge::record(std::string_view event, const nlohmann::json& fields) {
  std::lock_guard lock(count_mutex_);
  if (options_.record) options_.record(event, fields);
}

void Judge::tally(const std::string& host, bool allowed, std::uint64_t in, std::uint64_t out) {
  std::lock_guard lock(count_mutex_);
  (allowed ? connections_ : refused_) += 1;
  in_ += in;
  out_ += out;
  if (std::find(hosts_.begin(), hosts_.end(), host) == hosts_.end()) hosts_.push_back(host);
}

nlohmann::json Judge::summary() const {
  std::lock_guard lock(count_mutex_);
  return {{"connections", connections_},
          {"refused", refused_},
          {"bytes_in", in_},
          {"bytes_out", out_},
          {"hosts", hosts_}};
}

Connection::Connection(Connection&& other) noexcept
    : judge_(std::exchange(other.judge_, nullptr)),
      fd_(std::exchange(other.fd_, -1)),
      address_(other.address_),
      event_(std::move(other.event_)),
      in_(std::exchange(other.in_, 0)),
      out_(std::exchange(other.out_, 0)),
      opened_(other.opened_) {}

Connection& Connection::operator=(Connection&& other) noexcept {
  if (this != &other) {
    close();
    judge_ = std::exchange(other.judge_, nullptr);
    fd_ = std::exchange(other.fd_, -1);
    address_ = other.address_;
    event_ = std::move(other.event_);
    in_ = std::exchange(other.in_, 0);
    out_ = std::exchange(other.out_, 0);
    opened_ = other.opened_;
  }
  return *this;
}

Connection::~Connection() {
  close();
}

ssize_t Connection::read(void* buffer, std::size_t size) {
  const ssize_t n = ::read(fd_, buffer, size);
  if (n > 0) in_ += static_cast<std::uint64_t>(n);
  return n;
}

ssize_t Connection::write(const void* buffer, std::size_t size) {
  const ssize_t n = ::write(fd_, buffer, size);
  if (n > 0) out_ += static_cast<std::uint64_t>(n);
  return n;
}

void Connection::count(std::uint64_t in, std::uint64_t out) {
  in_ += in;
  out_ += out;
}

void Connection::close() noexcept {
  if (fd_ < 0) return;
  ::close(std::exchange(fd_, -1));
  if (judge_ == nullptr) return;
  event_["bytes_in"] = in_;
  event_["bytes_out"] = out_;
  event_["duration_ms"] = ms_since(opened_);
  // The event is the record, not the connection: a failure to make it (out
  // of memory) must not escape a destructor.
  try {
    judge_->record("net.connect", event_);
    judge_->tally(event_.value("name", std::string()), true, in_, out_);
  } catch (...) {
  }
  judge_ = nullptr;
}

}  // namespace chock::net
