#include "workspace/session_git.hpp"

#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>

#include "util/fs.hpp"
#include "workspace/session_refs.hpp"

namespace chock::workspace::session_git {

Expected<void> check_objects(const Session& s) {
  char link[PATH_MAX];
  std::string repo = s.dir + "/git/repo";
  ssize_t n = ::readlink(repo.c_str(), link, sizeof link - 1);
  if (n < 0 || std::string(link, static_cast<std::size_t>(n)) != s.common_dir)
    return Error{"the session's link to its repository is not the one Chock made", repo, 0};
  auto alt = fs::read_file_nofollow(s.objects() + "/info/alternates", 4096);
  if (!alt || *alt != "../../repo/objects\n")
    return Error{"the session's objects/info/alternates is not the one Chock made: refusing to read them",
                 s.objects(), 0, Errc::hostile_content};
  // Host-side git opens these files: a link could lead it anywhere, and a
  // FIFO, socket or device would block it or feed it. Only files and directories.
  static thread_local std::string found;
  static thread_local const char* what;
  found.clear();
  what = nullptr;
  ::nftw(
      s.objects().c_str(),
      [](const char* p, const struct stat* st, int type, FTW*) {
        if (type == FTW_SL || type == FTW_SLN) {
          what = "a symbolic link";
        } else if (type == FTW_DNR || type == FTW_NS) {
          what = "an entry Chock cannot read";
        } else if (type == FTW_F && !S_ISREG(st->st_mode)) {
          what = S_ISFIFO(st->st_mode)                          ? "a FIFO"
                 : S_ISSOCK(st->st_mode)                        ? "a socket"
                 : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device node"
                                                                : "a special file";
        }
        if (what == nullptr) return 0;
        found = p;
        return 1;
      },
      64, FTW_PHYS);
  if (what != nullptr)
    return Error{
        std::string("the session's objects hold ") + what + ", which Chock does not read: refusing them",
        found, 0, Errc::hostile_content};
  return {};
}

git::Env env(const Session& s) {
  return git::repo_env(s.common_dir, {}, {}, s.objects());
}

std::string from(const Session& s) {
  return s.applied.empty() ? s.base : s.applied;
}

std::string parked_ref(const Session& s) {
  return "refs/chock/" + s.id;
}

Expected<std::string> head(const Session& s) {
  auto text = fs::read_file_nofollow(s.admin() + "/HEAD", 4096);
  if (!text) return std::move(text).error();
  std::string h = git::chomp(*text);
  if (git::is_object_id(h)) return h;
  if (h.rfind("ref: refs/", 0) == 0) {
    std::string ref = h.substr(5);
    auto ok = git::run({"check-ref-format", ref});
    if (!ok) return std::move(ok).error();
    if (ok->ok()) {
      // A branch of the session's own (or moved inside) first, else the repository's.
      std::string target = ref;
      if (auto own = session_refs::read(s); own && own->count(ref) != 0) target = own->at(ref);
      auto r = git::capture({"rev-parse", "-q", "--verify", target + "^{commit}"}, env(s),
                            "resolve the session's HEAD");
      if (r) return git::chomp(*r);
    }
  }
  return Error{"the session's HEAD is not a commit", s.admin() + "/HEAD", 0};
}

Expected<std::vector<std::string>> commits(const Session& s, const std::string& head) {
  auto out = git::capture({"log", "--reverse", "--format=%h %s", from(s) + ".." + head}, env(s),
                          "list the session's commits");
  if (!out) return std::move(out).error();
  return git::split(*out, '\n');
}

Expected<void> park(const Session& s, const std::string& head) {
  git::Env pack_env = env(s);
  pack_env.stdin_data = head + "\n^" + from(s) + "\n";
  auto pack = git::run({"pack-objects", "--revs", "--stdout", "-q"}, pack_env);
  if (!pack) return std::move(pack).error();
  if (!pack->ok()) return Error{"pack the session's objects: " + pack->first_error_line(), s.objects(), 0};
  git::Env real = git::repo_env(s.common_dir);
  real.stdin_data = std::move(pack->out);
  // --strict: every object is checked before it is written into the real repository.
  if (auto r = git::capture({"unpack-objects", "-q", "--strict"}, real, "copy the session's objects"); !r)
    return std::move(r).error();
  real.stdin_data.clear();
  if (auto r = git::capture({"update-ref", "-m", "chock: park session " + s.id, parked_ref(s), head}, real,
                            "park the session's commits");
      !r)
    return std::move(r).error();
  return {};
}

}  // namespace chock::workspace::session_git
