#include "cli/jit_fallback.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <string_view>

#include "chock/workspace.hpp"
#include "workspace/fs.hpp"

extern const unsigned char chock_pcre2_nojit_so[];
extern const std::size_t chock_pcre2_nojit_so_size;
extern const char chock_pcre2_nojit_so_sha256[];

namespace chock::cli {

Expected<void> add_pcre2_without_jit(Config& config) {
  const std::string_view bytes(reinterpret_cast<const char*>(chock_pcre2_nojit_so),
                               chock_pcre2_nojit_so_size);
  auto data = workspace::data_dir();
  if (!data) return std::move(data).error();
  const std::string dir = *data + "/lib";
  // Named by its hash: a newer chock writes its own beside an older one's.
  const std::string path = dir + "/pcre2-nojit-" + std::string(chock_pcre2_nojit_so_sha256, 16) + ".so";
  // Checked by its size and mode, not read back whole on every call: written
  // once through a temporary file and renamed, 0444 in the caller's 0700 data
  // directory, it is either all there or absent; a short one (a full disk
  // before the rename took a name) is replaced.
  struct stat st {};
  const bool there = ::lstat(path.c_str(), &st) == 0;
  if (!there || !S_ISREG(st.st_mode) || static_cast<std::size_t>(st.st_size) != bytes.size() ||
      (st.st_mode & 07777) != 0444) {
    if (auto r = workspace::fs::make_dirs(dir, 0755); !r) return r;
    // Never replaced while another call may have it bound (a mount of a file
    // renamed over is gone): where it is missing it is added, and a second
    // writer finds the first's; only a damaged one is replaced.
    auto r = !there ? workspace::fs::write_file_new(path, std::string(bytes), 0444)
                    : workspace::fs::write_file_atomic(path, std::string(bytes), 0444);
    if (!r && r.error().code != EEXIST) return r;
  }
  config.binds.push_back(Bind{path, kPcre2NoJitInside, Access::read_only});
  config.env->push_back(std::string("LD_PRELOAD=") + kPcre2NoJitInside);
  return {};
}

}  // namespace chock::cli
