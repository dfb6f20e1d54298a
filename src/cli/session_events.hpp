// The session log as a command writes it: the record of what happened. A
// command is not refused because the log cannot be written, but the person
// is told, once.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "log/session_log.hpp"

namespace chock::cli {

class SessionEvents {
 public:
  SessionEvents() = default;
  SessionEvents(const std::string& project, const std::string& session) { open(project, session); }

  void open(const std::string& project, const std::string& session) {
    auto opened = log::SessionLog::open(project, session);
    if (opened)
      log_.emplace(std::move(*opened));
    else
      std::fprintf(stderr, "chock: warning: no session log: %s\n", opened.error().message().c_str());
  }
  void add(std::string_view event, const nlohmann::json& fields) {
    if (!log_) return;
    if (auto r = log_->append(event, fields); !r) {
      std::fprintf(stderr, "chock: warning: session log: %s\n", r.error().message().c_str());
      log_.reset();
    }
  }
  // Room for the lines after a call, whatever the call does to the disk.
  void reserve(std::uint64_t bytes) {
    if (!log_) return;
    if (auto r = log_->reserve(bytes); !r)
      std::fprintf(stderr, "chock: warning: session log: %s\n", r.error().message().c_str());
  }

 private:
  std::optional<log::SessionLog> log_;
};

}  // namespace chock::cli
