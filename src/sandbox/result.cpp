#include <signal.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "chock/error.hpp"
#include "chock/result.hpp"

namespace chock {

int Result::exit_status() const noexcept {
  if (setup_failure) return 125;
  if (exec_error) return *exec_error == ENOENT || *exec_error == ENOTDIR ? 127 : 126;
  if (signal) return 128 + *signal;
  if (exit_code) return *exit_code;
  return 125;
}

namespace {

const char* cgroup_state_name(CgroupState s) {
  switch (s) {
    case CgroupState::ok:
      return "ok";
    case CgroupState::off:
      return "off";
    case CgroupState::unsupported:
      return "unsupported";
    case CgroupState::supplied:
      return "supplied";
  }
  return "unknown";
}

}  // namespace

std::string Result::to_json() const {
  return json().dump();
}

nlohmann::json Result::json() const {
  nlohmann::json j;
  j["exit_status"] = exit_status();
  j["exit_code"] = exit_code ? nlohmann::json(*exit_code) : nlohmann::json(nullptr);
  if (report_lost) j["report_lost"] = true;
  if (signal) {
    j["signal"] = *signal;
    const char* abbrev = sigabbrev_np(*signal);
    j["signal_name"] = abbrev != nullptr ? std::string("SIG") + abbrev : std::to_string(*signal);
  } else {
    j["signal"] = nullptr;
  }
  j["duration_ms"] = std::chrono::duration<double, std::milli>(duration).count();
  j["timed_out"] = timed_out;
  j["cancelled"] = cancelled;
  if (setup_failure) {
    j["setup_failure"] = {{"step", setup_failure->step},
                          {"errno", setup_failure->code},
                          {"errno_name", errno_name(setup_failure->code)},
                          {"detail", setup_failure->detail}};
  }
  if (exec_error) j["exec_error"] = {{"errno", *exec_error}, {"errno_name", errno_name(*exec_error)}};
  j["write_execute"] = write_execute_relaxed ? "relaxed" : "strict";
  j["memfd_exec"] = memfd_exec;
  j["network_unreachable"] = network_unreachable;
  if (network_filtered) j["network_refusals"] = network_refusals;
  j["write_execute_refused"] = write_execute_refused;
  if (write_execute_refused > 0) j["write_execute_program"] = write_execute_program;
  j["user_namespace_refused"] = user_namespace_refused;
  if (user_namespace_refused > 0) j["user_namespace_program"] = user_namespace_program;
  nlohmann::json kills = nlohmann::json::array();
  for (const auto& k : filter_kills)
    kills.push_back({{"pid", k.pid}, {"command", k.command}, {"call", k.call}});
  j["filter_kills"] = {{"count", filter_kill_count}, {"first", kills}};
  j["never_ending"] = never_ending ? nlohmann::json{{"pid", never_ending_after.pid},
                                                    {"command", never_ending_after.command},
                                                    {"call", never_ending_after.call}}
                                   : nlohmann::json(nullptr);
  j["untraced_clone_refused"] = {{"count", untraced_clone_refused},
                                 {"sanitizer_tracer", sanitizer_tracer_refused}};
  j["landlock"] = {{"abi", landlock.abi},
                   {"handled", landlock.handled},
                   {"missing", landlock.missing},
                   {"scoped_abstract_unix", landlock.scoped_abstract_unix},
                   {"scoped_signals", landlock.scoped_signals}};
  nlohmann::json rl = nlohmann::json::array();
  for (const auto& r : limits.rlimits) rl.push_back({{"name", r.name}, {"soft", r.soft}, {"hard", r.hard}});
  nlohmann::json lim = {{"rlimits", rl},
                        {"cgroup", cgroup_state_name(limits.cgroup)},
                        {"events",
                         {{"memory_oom_kill", limits.memory_oom_kills},
                          {"memory_max", limits.memory_max_events},
                          {"pids_max", limits.pids_max_events}}}};
  if (!limits.cgroup_reason.empty()) lim["cgroup_reason"] = limits.cgroup_reason;
  if (limits.memory_max) lim["memory_max"] = *limits.memory_max;
  if (limits.pids_max) lim["pids_max"] = *limits.pids_max;
  if (limits.memory_measured_limit)
    lim["memory_measured"] = {{"limit", *limits.memory_measured_limit},
                              {"why", limits.memory_measured_why},
                              {"peak", limits.memory_measured_peak},
                              {"samples", limits.memory_measured_samples}};
  lim["killed_by"] = limits.killed_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(limits.killed_by);
  if (!limits.killed_by.empty()) lim["killed_by_limit"] = limits.killed_by_limit;
  lim["core_dump_suppressed"] = limits.core_dump_suppressed;
  if (!limits.disk_reason.empty()) lim["disk_reason"] = limits.disk_reason;
  j["limits"] = lim;
  return j;
}

}  // namespace chock
