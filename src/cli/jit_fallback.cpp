#include "cli/jit_fallback.hpp"

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
  auto there = workspace::fs::read_file_nofollow(path, bytes.size() + 1);
  if (!there || *there != bytes) {
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
