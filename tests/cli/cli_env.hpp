// The environment of a cli test's chock: its data, state, cache and config
// directories below the test's own directory, never the caller's.
#pragma once

#include "process.hpp"

namespace chock::test {

inline RunOptions chock_dirs_under(const TempDir& home) {
  RunOptions o;
  o.env = {{"XDG_DATA_HOME", home / "data"},
           {"XDG_STATE_HOME", home / "state"},
           {"XDG_CACHE_HOME", home / "cache"},
           {"XDG_CONFIG_HOME", home / "config"}};
  return o;
}

}  // namespace chock::test
