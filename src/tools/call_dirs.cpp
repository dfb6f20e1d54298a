// What a call of a session gets besides its workspace: the project's
// toolchain cache and the session's scratchpad (include/chock/workspace.hpp).
// Both are written by calls, so the host side only makes them, counts them
// (sandbox/directory_cap.cpp) and removes them, never following a link.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "chock/workspace.hpp"
#include "log/session_log.hpp"
#include "util/dirs.hpp"
#include "util/fs.hpp"

namespace chock::workspace {

namespace {

// A directory made once, for the session's owner. One that is there is left
// as it is: a call may have changed what is inside, and nothing here follows
// what it made.
Expected<void> make_owned(const Session& s, const std::string& path) {
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return {};
    return sys_error("mkdir", path);
  }
  return fs::give_to(s.owner, path);
}

void set_env(std::vector<std::string>& env, const std::string& name, const std::string& value) {
  std::erase_if(env, [&](const std::string& e) { return e.starts_with(name + "="); });
  env.push_back(name + "=" + value);
}

}  // namespace

Expected<std::string> cache_dir(const std::string& project) {
  auto root = chock_dir(Xdg::cache);
  if (!root) return root;
  return *root + "/" + log::project_key(project);
}

std::string scratch_dir(const Session& s) {
  return s.dir + "/scratch";
}

std::string tasks_dir(const Session& s) {
  return s.dir + "/tasks";
}

Expected<std::string> add_call_dirs(const Session& s, Config& config) {
  auto cache = cache_dir(s.project);
  if (!cache) return cache;
  auto root = chock_dir(Xdg::cache);
  if (auto made = fs::make_dirs(*root, 0700); !made) return std::move(made).error();
  if (!fs::is_dir(*cache)) {
    if (auto r = make_owned(s, *cache); !r) return std::move(r).error();
    if (auto r = make_owned(s, *cache + "/home"); !r) return std::move(r).error();
  }
  if (auto r = make_owned(s, scratch_dir(s)); !r) return std::move(r).error();
  config.binds.push_back(Bind{*cache, kCacheInside, Access::read_write});
  config.binds.push_back(Bind{scratch_dir(s), kScratchInside, Access::read_write});
  // Made by Chock's runner, never by a call: what a task printed is evidence.
  if (fs::is_dir(tasks_dir(s))) config.binds.push_back(Bind{tasks_dir(s), kTasksInside, Access::read_only});
  if (config.env) {
    set_env(*config.env, "HOME", std::string(kCacheInside) + "/home");
    set_env(*config.env, "XDG_CACHE_HOME", std::string(kCacheInside) + "/home/.cache");
    set_env(*config.env, "CHOCK_SCRATCHPAD", kScratchInside);
  }
  return *cache;
}

Expected<bool> clear_cache(const std::string& project) {
  auto cache = cache_dir(project);
  if (!cache) return std::move(cache).error();
  struct stat st {};
  if (::lstat(cache->c_str(), &st) != 0) return false;
  if (auto r = fs::remove_tree(*cache); !r) return std::move(r).error();
  return true;
}

}  // namespace chock::workspace
