#include "session/jit_fallback.hpp"

#include <string>
#include <string_view>

#include "util/dirs.hpp"

extern const unsigned char chock_pcre2_nojit_so[];
extern const std::size_t chock_pcre2_nojit_so_size;

namespace chock::session {

Expected<void> add_pcre2_without_jit(Config& config) {
  auto git = companion("chock-git");
  if (!git) return std::move(git).error();
  // Written into the sandbox's own root from this binary: no copy in the
  // data directory to keep whole, no mount of one.
  config.files_inside.push_back(FileInside{
      kPcre2NoJitInside,
      std::string_view(reinterpret_cast<const char*>(chock_pcre2_nojit_so), chock_pcre2_nojit_so_size)});
  config.binds.push_back(Bind{*git, kGitInside, Access::read_only_file});
  // First, so a bare `git` is Chock's; no LD_PRELOAD for the call itself.
  bool path = false;
  for (auto& e : *config.env)
    if (e.starts_with("PATH=")) {
      e.insert(5, std::string(kGitDirInside) + ":");
      path = true;
    }
  if (!path) config.env->push_back(std::string("PATH=") + kGitDirInside + ":/usr/local/bin:/usr/bin:/bin");
  return {};
}

}  // namespace chock::session
