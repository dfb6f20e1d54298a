// The session log as a call or a command writes it: the record of what
// happened. Nothing is refused because the log cannot be written, but the
// person is told, once (through `warn`; unset: on stderr).
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log/session_log.hpp"

namespace chock::log {

class SessionEvents {
 public:
  using Warn = std::function<void(const std::string& line)>;
  SessionEvents() = default;
  SessionEvents(const std::string& project, const std::string& session, Warn warn = {})
      : warn_(std::move(warn)) {
    open(project, session);
  }
  SessionEvents(const SessionEvents&) = delete;
  SessionEvents& operator=(const SessionEvents&) = delete;
  // What is held moves with the log; the object moved from holds nothing.
  SessionEvents(SessionEvents&& from) noexcept
      : warn_(std::move(from.warn_)),
        log_(std::exchange(from.log_, std::nullopt)),
        holding_(std::exchange(from.holding_, false)),
        held_(std::exchange(from.held_, {})),
        reserve_held_(std::exchange(from.reserve_held_, 0)) {}
  SessionEvents& operator=(SessionEvents&& from) noexcept {
    if (this == &from) return *this;
    release();
    warn_ = std::move(from.warn_);
    log_ = std::exchange(from.log_, std::nullopt);
    holding_ = std::exchange(from.holding_, false);
    held_ = std::exchange(from.held_, {});
    reserve_held_ = std::exchange(from.reserve_held_, 0);
    return *this;
  }
  ~SessionEvents() { release(); }

  // From hold() to release() (or the end of this object), lines and the
  // reservation wait, each line's time taken when it is added: chock run
  // writes a call's first lines while the sandbox starts, not before.
  void hold() { holding_ = true; }
  void release() {
    if (!holding_) return;
    holding_ = false;
    if (log_ && !held_.empty())
      if (auto r = log_->append(std::span<const SessionLog::Entry>(held_)); !r) warn(r.error());
    held_.clear();
    if (reserve_held_ != 0) reserve(reserve_held_);
    reserve_held_ = 0;
  }

  void open(const std::string& project, const std::string& session) {
    auto opened = SessionLog::open(project, session);
    if (opened)
      log_.emplace(std::move(*opened));
    else
      say("warning: no session log: " + opened.error().message());
  }
  void add(std::string_view event, const nlohmann::json& fields) {
    if (!log_) return;
    if (holding_) {
      held_.push_back(SessionLog::entry(event, fields));
      return;
    }
    if (auto r = log_->append(event, fields); !r) warn(r.error());
  }
  // Room for the lines after a call, whatever the call does to the disk.
  void reserve(std::uint64_t bytes) {
    if (!log_) return;
    if (holding_) {
      reserve_held_ = bytes;
      return;
    }
    if (auto r = log_->reserve(bytes); !r) say("warning: session log: " + r.error().message());
  }

 private:
  void warn(const Error& e) {
    say("warning: session log: " + e.message());
    log_.reset();
  }
  void say(const std::string& line) const {
    if (warn_)
      warn_(line);
    else
      std::fprintf(stderr, "chock: %s\n", line.c_str());
  }

  Warn warn_;
  std::optional<SessionLog> log_;
  bool holding_ = false;
  std::vector<SessionLog::Entry> held_;
  std::uint64_t reserve_held_ = 0;
};

}  // namespace chock::log
