// Where things are for this process: the running binary's directory, the
// current directory, and Chock's own companion programs.
#pragma once

#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// The directory of the running binary ("" when /proc cannot say).
[[nodiscard]] std::string dir_of_self();

// The current directory ("/" when it cannot be read).
[[nodiscard]] std::string current_dir();

// A program of Chock's own (chock-helper, chock-fetch-hop, chock-connect):
// beside the running binary (a build tree, an installed chock), in
// ../libexec/chock/ of it, or where Chock was installed (a program that
// embeds libchock lives elsewhere). The Error names every place looked at.
[[nodiscard]] Expected<std::string> companion(std::string_view name);

}  // namespace chock
