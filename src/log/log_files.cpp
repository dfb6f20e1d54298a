// Finding, listing and removing session logs on disk. Every log is a
// regular file <session>.jsonl in a project folder of the state directory;
// anything else found there (a link, a folder) is not a log and is left alone.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "chock/workspace.hpp"
#include "log/session_log.hpp"
#include "util/fd.hpp"

namespace chock::log {

namespace {

constexpr std::string_view kLogSuffix = ".jsonl";
constexpr std::string_view kHeadSuffix = ".head";

// The regular files named <valid session id>.jsonl directly in `folder`.
Expected<void> logs_in(int sessions_fd, const std::string& sessions, const std::string& folder,
                       std::vector<LogFile>& out) {
  UniqueFd fd(::openat(sessions_fd, folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd)
    return errno == ENOTDIR || errno == ELOOP ? Expected<void>{} : sys_error("open", sessions + "/" + folder);
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return sys_error("list session logs", sessions + "/" + folder);
  (void)fd.release();
  while (dirent* entry = ::readdir(dir)) {
    std::string_view name = entry->d_name;
    if (!name.ends_with(kLogSuffix)) continue;
    std::string session(name.substr(0, name.size() - kLogSuffix.size()));
    if (!workspace::validate_session_id(session)) continue;
    struct stat st {};
    if (::fstatat(::dirfd(dir), entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    std::string path = sessions;
    path.append("/").append(folder).append("/").append(entry->d_name);
    LogFile log{session, std::move(path), st.st_mtim.tv_sec, static_cast<std::uint64_t>(st.st_size)};
    std::string head = session + std::string(kHeadSuffix);
    if (::fstatat(::dirfd(dir), head.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
      log.bytes += static_cast<std::uint64_t>(st.st_size);
    out.push_back(std::move(log));
  }
  ::closedir(dir);
  return {};
}

}  // namespace

Expected<std::vector<LogFile>> list_logs() {
  auto state = state_dir();
  if (!state) return std::move(state).error();
  const std::string sessions = *state + "/sessions";
  std::vector<LogFile> out;
  UniqueFd fd(::open(sessions.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return out;
    return sys_error("open the session logs' folder", sessions);
  }
  DIR* dir = ::fdopendir(fd.get());
  if (dir == nullptr) return sys_error("list session logs", sessions);
  (void)fd.release();
  std::vector<std::string> folders;
  while (dirent* entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") folders.push_back(std::move(name));
  }
  Expected<void> listed{};
  for (const auto& folder : folders) {
    listed = logs_in(::dirfd(dir), sessions, folder, out);
    if (!listed) break;
  }
  ::closedir(dir);
  if (!listed) return std::move(listed).error();
  return out;
}

Expected<std::string> find_log(const std::string& session) {
  if (auto valid = workspace::validate_session_id(session); !valid) return std::move(valid).error();
  auto all = list_logs();
  if (!all) return std::move(all).error();
  std::vector<std::string> found;
  for (const auto& log : *all)
    if (log.session == session) found.push_back(log.path);
  auto state = state_dir();
  if (found.empty())
    return Error{
        "no log of session '" + session + "' under " + (state ? *state + "/sessions" : "the state directory"),
        "", 0, Errc::no_such_session};
  if (found.size() > 1)
    return Error{
        "session '" + session + "' has a log in more than one project folder: " + found[0] + ", " + found[1],
        "", 0};
  return found.front();
}

Expected<std::uint64_t> remove_log(const LogFile& log) {
  std::string head = log.path.substr(0, log.path.size() - kLogSuffix.size()) + std::string(kHeadSuffix);
  if (::unlink(log.path.c_str()) != 0 && errno != ENOENT)
    return sys_error("remove the session log", log.path);
  if (::unlink(head.c_str()) != 0 && errno != ENOENT) return sys_error("remove the session log's head", head);
  return log.bytes;
}

}  // namespace chock::log
