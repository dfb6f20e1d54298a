#include "cli/limit_flags.hpp"

#include <fcntl.h>

#include "util/size.hpp"

namespace chock::cli {

void add_limit_flags(Command sub, LimitFlags& f) {
  sub.add_option("--memory", f.memory,
                 "memory of the whole call, e.g. 512MiB, 2GiB (cgroup memory.max, else measured by Chock)");
  sub.add_option("--data", f.data,
                 "data segment of each process (RLIMIT_DATA), e.g. 4GiB; breaks AddressSanitizer and "
                 "ThreadSanitizer builds");
  sub.add_option("--pids", f.pids, "most processes the program may have at once (pids.max, RLIMIT_NPROC)");
  sub.add_option("--nofile", f.nofile, "most open files per process (RLIMIT_NOFILE)");
  sub.add_option("--fsize", f.fsize, "largest file the program may write (RLIMIT_FSIZE), e.g. 1GiB");
  sub.add_option("--cpu", f.cpu, "CPU seconds per process; SIGXCPU then, 30 s later, SIGKILL (RLIMIT_CPU)");
  sub.add_option("--cgroup", f.cgroup,
                 "run inside this cgroup v2 directory; Chock writes and reads nothing in it, and refuses "
                 "rather than run outside it");
}

Expected<void> apply_limit_flags(const LimitFlags& f, Config& config, UniqueFd& cgroup_dir) {
  struct Field {
    const char* flag;
    const std::string& text;
    bool size;
    std::optional<std::uint64_t>& out;
  };
  Field fields[] = {{"--memory", f.memory, true, config.limits.memory_bytes},
                    {"--data", f.data, true, config.limits.data_bytes},
                    {"--pids", f.pids, false, config.limits.processes},
                    {"--nofile", f.nofile, false, config.limits.open_files},
                    {"--fsize", f.fsize, true, config.limits.file_size_bytes},
                    {"--cpu", f.cpu, false, config.limits.cpu_seconds}};
  for (auto& field : fields) {
    if (field.text.empty()) continue;
    auto v = field.size ? parse_size(field.flag, field.text) : parse_count(field.flag, field.text);
    if (!v) return std::move(v).error();
    field.out = *v;
  }
  if (!f.cgroup.empty()) {
    cgroup_dir.reset(::open(f.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!cgroup_dir) {
      Error e = sys_error("--cgroup", f.cgroup);
      e.kind = Errc::cgroup_placement_refused;
      return e;
    }
    config.containment.kind = Containment::Kind::supplied;
    config.containment.cgroup_fd = cgroup_dir.get();
  }
  return {};
}

}  // namespace chock::cli
