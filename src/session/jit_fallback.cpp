#include "session/jit_fallback.hpp"

#include <string>
#include <string_view>

extern const unsigned char chock_pcre2_nojit_so[];
extern const std::size_t chock_pcre2_nojit_so_size;

namespace chock::session {

void add_pcre2_without_jit(Config& config) {
  // Written into the sandbox's own root from this binary: no copy in the
  // data directory to keep whole, no mount of one.
  config.files_inside.push_back(FileInside{
      kPcre2NoJitInside,
      std::string_view(reinterpret_cast<const char*>(chock_pcre2_nojit_so), chock_pcre2_nojit_so_size)});
  config.env->push_back(std::string("LD_PRELOAD=") + kPcre2NoJitInside);
}

}  // namespace chock::session
