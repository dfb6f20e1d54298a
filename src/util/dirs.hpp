// Where things are for this process: the running binary's directory, the
// current directory, Chock's own companion programs, and its directories
// under the XDG base directories (every lookup of XDG_*_HOME is here).
#pragma once

#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// The directory of the running binary ("" when /proc cannot say).
[[nodiscard]] std::string dir_of_self();

// The current directory; "." when getcwd cannot say (a removed directory),
// so that resolving it later fails by name instead of meaning "/".
[[nodiscard]] std::string current_dir();

// Chock's own directory under an XDG base directory: $XDG_<KIND>_HOME/chock
// when that is an absolute path (a relative one is ignored, as the XDG
// specification says), else the specification's default below
// home_directory() (util/passwd.hpp). An Error when neither is known.
//   config  ~/.config/chock       the operator's config.zon
//   data    ~/.local/share/chock  workspaces, bases, credentials (docs/architecture.md)
//   state   ~/.local/state/chock  session logs
//   cache   ~/.cache/chock        each project's toolchain cache
enum class Xdg { config, data, state, cache };
[[nodiscard]] Expected<std::string> chock_dir(Xdg kind);

// A program of Chock's own (chock-helper, chock-fetch-hop, chock-connect):
// beside the running binary (a build tree, an installed chock), in
// ../libexec/chock/ of it, or where Chock was installed (a program that
// embeds libchock lives elsewhere). The Error names every place looked at.
[[nodiscard]] Expected<std::string> companion(std::string_view name);

}  // namespace chock
