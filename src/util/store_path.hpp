// A path of the Nix store, as a closure names it.
#pragma once

#include <string>
#include <string_view>

namespace chock {

inline constexpr std::string_view kNixStore = "/nix/store/";

// "/nix/store/" and one name, nothing above or below it.
inline bool is_store_path(std::string_view path) {
  if (!path.starts_with(kNixStore)) return false;
  const std::string_view name = path.substr(kNixStore.size());
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

}  // namespace chock
