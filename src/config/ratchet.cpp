// The ratchet over the three files' limits, and the machine a share is of.
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "config/chock_zon.hpp"

namespace chock::config {

Machine this_machine() {
  // Asked once a process: a call works out its limits more than once.
  static const Machine machine = [] {
    Machine m;
    const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
    m.cpus = cpus > 0 ? static_cast<std::uint64_t>(cpus) : 1;
    struct sysinfo info {};
    if (::sysinfo(&info) == 0) m.ram_bytes = static_cast<std::uint64_t>(info.totalram) * info.mem_unit;
    return m;
  }();
  return machine;
}

namespace {

// `percent` (1..100) of `whole`, rounded down, at least 1; no overflow.
std::uint64_t share_of(std::uint64_t whole, std::uint64_t percent) {
  const std::uint64_t part = whole / 100 * percent + whole % 100 * percent / 100;
  return part > 0 ? part : 1;
}

std::string bytes_text(std::uint64_t bytes) {
  struct Unit {
    const char* name;
    std::uint64_t size;
  };
  for (Unit u :
       {Unit{"TiB", 1ULL << 40}, Unit{"GiB", 1ULL << 30}, Unit{"MiB", 1ULL << 20}, Unit{"KiB", 1ULL << 10}}) {
    const std::uint64_t size = u.size;
    if (bytes < size) continue;
    if (bytes % size == 0) return std::to_string(bytes / size) + " " + u.name;
    char text[64];
    std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / static_cast<double>(size),
                  u.name);
    return text;
  }
  return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
}

// One limit's values as the three files wrote them, resolved.
struct Layered {
  const char* name;  // "memory", "processes", "timeout"
  bool is_bytes;
  std::optional<LimitValue> project, operator_value, bundle;
  // The sandbox's own defaults for the mechanisms this one number sets
  // (equal today; a number that set two mechanisms could have two).
  std::uint64_t lowest_default;
  std::uint64_t highest_default;
  // Who the operator's value is, when it is not the operator's file's.
  const char* operator_label = "the operator's config.zon";
};

class Resolver {
 public:
  Resolver(const Layered& l, const Machine& m) : layered_(l), machine_(m) {}

  std::uint64_t number(const LimitValue& v) const {
    return layered_.is_bytes ? resolve_memory(v, machine_) : resolve_processes(v, machine_);
  }
  // "8 GiB", "50% (8 GiB)", "256", "50% (1024)".
  std::string text(const LimitValue& v) const {
    const std::uint64_t n = number(v);
    std::string shown = layered_.is_bytes ? bytes_text(n) : std::to_string(n);
    if (std::string_view(layered_.name) == "timeout") shown += " s";
    if (v.kind == LimitValue::Kind::absolute) return shown;
    return std::to_string(v.value) + "% (" + shown + ")";
  }

 private:
  const Layered& layered_;
  const Machine& machine_;
};

std::optional<std::uint64_t> ratchet_one(const Layered& l, const Machine& machine,
                                         std::vector<std::string>& notices) {
  const Resolver r(l, machine);
  const LimitValue* asked = nullptr;  // the value someone wrote for this run
  const char* who = nullptr;
  if (l.project) {
    asked = &*l.project;
    who = "the project";
  } else if (l.operator_value) {
    asked = &*l.operator_value;
    who = l.operator_label;
  }
  // The lowest of the values that bound this one, and who wrote it.
  const LimitValue* holder = nullptr;
  const char* holder_name = nullptr;
  std::optional<std::uint64_t> result;
  if (asked != nullptr) result = r.number(*asked);
  if (l.project && l.operator_value && r.number(*l.operator_value) < *result) {
    result = r.number(*l.operator_value);
    holder = &*l.operator_value;
    holder_name = l.operator_label;
  }
  if (l.bundle) {
    const std::uint64_t ceiling = r.number(*l.bundle);
    if (result && ceiling < *result) {
      result = ceiling;
      holder = &*l.bundle;
      holder_name = "the organisation bundle";
    } else if (!result && ceiling < l.highest_default) {
      // Nobody asked, and a default is above the ceiling. The lower of the
      // ceiling and the lowest default holds every mechanism under the
      // ceiling without raising any default; nobody needs telling.
      result = std::min(ceiling, l.lowest_default);
    }
  }
  if (asked != nullptr && holder != nullptr)
    notices.push_back(std::string(who) + " asks for " + l.name + " " + r.text(*asked) + "; " + holder_name +
                      " holds it to " + r.text(*holder));
  return result;
}

}  // namespace

std::uint64_t resolve_processes(const LimitValue& value, const Machine& machine) {
  if (value.kind == LimitValue::Kind::absolute) return value.value;
  const std::uint64_t cpus = machine.cpus > 0 ? machine.cpus : 1;
  return share_of(kProcessesPerCpu * cpus, value.value);
}

std::uint64_t resolve_memory(const LimitValue& value, const Machine& machine) {
  if (value.kind == LimitValue::Kind::absolute) return value.value;
  return share_of(machine.ram_bytes, value.value);
}

EffectiveLimits ratchet(const LimitsSpec& project, const LimitsSpec& operator_defaults,
                        const LimitsSpec& bundle, const Machine& machine) {
  EffectiveLimits out;
  out.processes = ratchet_one(Layered{"processes", false, project.processes, operator_defaults.processes,
                                      bundle.processes, Limits::kDefaultProcesses, Limits::kDefaultProcesses},
                              machine, out.notices);
  out.memory_bytes =
      ratchet_one(Layered{"memory", true, project.memory, operator_defaults.memory, bundle.memory,
                          Limits::kDefaultMemoryBytes, Limits::kDefaultMemoryBytes},
                  machine, out.notices);
  // A deadline is a number of seconds. A project lowers it and never raises
  // it past the operator's, or past Chock's default when the operator says
  // nothing.
  Layered timeout{"timeout",
                  false,
                  project.timeout,
                  operator_defaults.timeout,
                  bundle.timeout,
                  kDefaultTimeoutSeconds,
                  kDefaultTimeoutSeconds};
  if (!timeout.operator_value) {
    timeout.operator_value = LimitValue{LimitValue::Kind::absolute, kDefaultTimeoutSeconds, ""};
    timeout.operator_label = "Chock's default";
  }
  out.timeout_seconds = ratchet_one(timeout, machine, out.notices).value_or(kDefaultTimeoutSeconds);
  // The disk limit likewise: lowered by a project, never raised past the
  // operator's or Chock's default.
  Layered disk{"disk",           true, project.disk, operator_defaults.disk, bundle.disk, kDefaultDiskBytes,
               kDefaultDiskBytes};
  if (!disk.operator_value) {
    disk.operator_value = LimitValue{LimitValue::Kind::absolute, kDefaultDiskBytes, ""};
    disk.operator_label = "Chock's default";
  }
  out.disk_bytes = ratchet_one(disk, machine, out.notices).value_or(kDefaultDiskBytes);
  // The cache the same way.
  Layered cache{
      "cache",           true, project.cache, operator_defaults.cache, bundle.cache, kDefaultCacheBytes,
      kDefaultCacheBytes};
  if (!cache.operator_value) {
    cache.operator_value = LimitValue{LimitValue::Kind::absolute, kDefaultCacheBytes, ""};
    cache.operator_label = "Chock's default";
  }
  out.cache_bytes = ratchet_one(cache, machine, out.notices).value_or(kDefaultCacheBytes);
  return out;
}

}  // namespace chock::config
