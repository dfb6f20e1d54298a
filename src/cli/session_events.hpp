// The session log as a command writes it: the record of what happened. A
// command is not refused because the log cannot be written, but the person
// is told, once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "log/session_log.hpp"

namespace chock::cli {

class SessionEvents {
 public:
  SessionEvents() = default;
  SessionEvents(const std::string& project, const std::string& session) { open(project, session); }
  SessionEvents(const SessionEvents&) = delete;
  SessionEvents& operator=(const SessionEvents&) = delete;
  // What is held moves with the log; the object moved from holds nothing.
  SessionEvents(SessionEvents&& from) noexcept
      : log_(std::exchange(from.log_, std::nullopt)),
        holding_(std::exchange(from.holding_, false)),
        held_(std::exchange(from.held_, {})),
        reserve_held_(std::exchange(from.reserve_held_, 0)) {}
  SessionEvents& operator=(SessionEvents&& from) noexcept {
    if (this == &from) return *this;
    release();
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
      if (auto r = log_->append(std::span<const log::SessionLog::Entry>(held_)); !r) warn(r.error());
    held_.clear();
    if (reserve_held_ != 0) reserve(reserve_held_);
    reserve_held_ = 0;
  }

  void open(const std::string& project, const std::string& session) {
    auto opened = log::SessionLog::open(project, session);
    if (opened)
      log_.emplace(std::move(*opened));
    else
      std::fprintf(stderr, "chock: warning: no session log: %s\n", opened.error().message().c_str());
  }
  void add(std::string_view event, const nlohmann::json& fields) {
    if (!log_) return;
    if (holding_) {
      held_.push_back(log::SessionLog::entry(event, fields));
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
    if (auto r = log_->reserve(bytes); !r)
      std::fprintf(stderr, "chock: warning: session log: %s\n", r.error().message().c_str());
  }

 private:
  void warn(const Error& e) {
    std::fprintf(stderr, "chock: warning: session log: %s\n", e.message().c_str());
    log_.reset();
  }

  std::optional<log::SessionLog> log_;
  bool holding_ = false;
  std::vector<log::SessionLog::Entry> held_;
  std::uint64_t reserve_held_ = 0;
};

}  // namespace chock::cli
