// What a call's git sees of the real repository: a view Chock writes, never
// the repository's own git dir. Inside, /run/chock/git/view (read-only)
// holds the branches and tags as one packed-refs file, HEAD, shallow,
// info/exclude and info/attributes; the session's common dir links to them
// and has a config Chock generates; /run/chock/git/repo/objects is the
// object store the session's alternates name.
//
// Not in the view: the real config (remote URLs with tokens,
// http.*.extraheader, credential helpers, includes), the index, reflogs,
// the stash, other worktrees' admin dirs, FETCH_HEAD and ORIG_HEAD.
//
// Objects. Without a denied path, the real object store is bound read-only:
// a session costs nothing at any size of history. With one, the real store
// would show the denied bytes wherever git still keeps them (a blob staged
// then unstaged, a commit amended out and held by the reflog, a stash), so
// the call gets a store of its own instead: one pack of every object
// reachable from the base and the branches and tags, and on a later call
// one more pack of what newer tips reach. check_deny_targets has refused a
// denied path that any of those commits holds, so no version of it is there.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/sha256.hpp"
#include "workspace/build.hpp"
#include "workspace/git.hpp"
#include "workspace/refs_stamp.hpp"
#include "workspace/session_refs.hpp"

namespace chock::workspace::build {

namespace {

// common/<name> links into the view; refs/ and packed-refs are the session's own.
// Where the stamp of the repository's refs the view was made from is kept (never mounted).
std::string refs_stamp_path(const Session& s) {
  return s.dir + "/git/refs-stamp";
}

// Where the stamp of everything a refresh of the view reads is kept: equal
// now, the view and the session's refs are as the last refresh left them.
std::string view_stamp_path(const Session& s) {
  return s.dir + "/git/view-stamp";
}

constexpr const char* kViewLinks[] = {"HEAD", "shallow", "info", "hooks"};

// What refresh_view reads besides the repository's refs, and what it would
// repair: the repository's files the view copies, the session's common dir
// (its refs, its config, its links into the view), and the view itself.
// A call that replaces or rewrites any of them moves its inode, size or
// change time, and the next refresh runs whole.
std::string view_inputs_stamp(const Session& s) {
  std::vector<std::string> common{"refs", "refs/heads", "refs/tags", "packed-refs", "config"};
  for (const char* name : kViewLinks) common.emplace_back(name);
  std::string stamp;
  for (const std::string& part :
       {refs_stamp::take_paths(s.common_dir, {"shallow", "info", "info/exclude", "info/attributes"}),
        refs_stamp::take_paths(s.common(), common),
        refs_stamp::take_paths(view_dir(s),
                               {"packed-refs", "refs", "refs/heads", "refs/tags", "info", "info/exclude",
                                "info/attributes", "hooks", "HEAD", "shallow"})}) {
    if (part.empty()) return {};
    stamp += part;
  }
  return "base " + s.base + "\n" + stamp;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The config keys a call's git may see: how the repository is laid out, who
// commits, and where the remotes are, their URLs without userinfo or query.
bool kept_key(const std::string& key) {
  static const char* const kCore[] = {"core.repositoryformatversion",
                                      "core.filemode",
                                      "core.symlinks",
                                      "core.ignorecase",
                                      "core.autocrlf",
                                      "core.eol",
                                      "core.precomposeunicode",
                                      "core.quotepath"};
  if (std::find(std::begin(kCore), std::end(kCore), key) != std::end(kCore)) return true;
  if (key.rfind("extensions.", 0) == 0) return true;
  if (key == "user.name" || key == "user.email") return true;
  auto ends = [&](const char* suffix) { return ends_with(key, suffix); };
  if (key.rfind("remote.", 0) == 0) return ends(".url") || ends(".pushurl") || ends(".fetch");
  if (key.rfind("branch.", 0) == 0) return ends(".remote") || ends(".merge");
  return false;
}

// A config value as git reads it back: quoted, with \ and " escaped; no
// newline can end the line early.
std::string config_value(const std::string& v) {
  std::string out = "\"";
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// "section.sub.name" as a config file writes it.
std::string config_line(const std::string& key, const std::string& value, std::string& section) {
  auto first = key.find('.');
  auto last = key.rfind('.');
  std::string head = key.substr(0, first);
  if (last != first) head += " " + config_value(key.substr(first + 1, last - first - 1));
  std::string out;
  if (head != section) {
    section = head;
    out += "[" + head + "]\n";
  }
  return out + "\t" + key.substr(last + 1) + " = " + config_value(value) + "\n";
}

// What a new session would otherwise ask git again, kept in the data
// directory (the caller's own), one file of each a repository: git's reading
// of the repository's config with the SHA-256 of the bytes it read, its
// branches and tags with the stamp of their files (refs_stamp.hpp). Each
// saves a new session a git process.
std::string git_cache_path(const std::string& name) {
  auto data = data_dir();
  return data ? *data + "/git-cache/" + name : std::string();
}

void keep_in_git_cache(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  // A cache: a failure to keep it costs the next session a git process, nothing more.
  if (fs::make_dirs(path.substr(0, path.rfind('/')), 0700))
    (void)fs::write_file_atomic(path, text, 0644, fs::Durable::no);
}

// `git config --list -z` of the repository's config, given its bytes on
// stdin, so the listing kept is of exactly the bytes it is kept by.
Expected<std::string> config_listing(const std::string& real_common) {
  const std::string path = real_common + "/config";
  // Not a small regular file (a link, say): git reads it by its path, and
  // nothing is kept. Else one file a repository, replaced when it changes.
  auto bytes = fs::read_file_nofollow(path, 1 << 20);
  const std::string cached = bytes ? git_cache_path("config-" + sha256_hex(real_common)) : std::string();
  const std::string key = bytes ? sha256_hex(*bytes) + '\0' : std::string();
  if (!cached.empty())
    if (auto hit = fs::read_file_nofollow(cached, 2 << 20); hit && hit->starts_with(key))
      return hit->substr(key.size());
  git::Env env;
  if (bytes) env.stdin_data = *bytes;
  // --no-includes, as git does for a named file anyway (an include is a key
  // like any other here, and not kept).
  auto listed = git::run({"config", "--no-includes", "--file", bytes ? "-" : path, "--list", "-z"}, env);
  if (!listed) return std::move(listed).error();
  if (!listed->ok())
    return Error{"read the repository's config: " + listed->first_error_line(), real_common, 0};
  keep_in_git_cache(cached, key + listed->out);
  return std::move(listed->out);
}

// The config of the session's common dir, built from the real one's kept keys.
Expected<std::string> generated_config(const std::string& real_common) {
  auto listed = config_listing(real_common);
  if (!listed) return std::move(listed).error();
  bool has_user = false;
  std::string body;
  std::string section;
  std::vector<std::pair<std::string, std::string>> kept;
  for (const auto& entry : git::split(*listed, '\0')) {
    auto nl = entry.find('\n');
    std::string key = entry.substr(0, nl);
    std::string value = nl == std::string::npos ? "true" : entry.substr(nl + 1);
    if (!kept_key(key)) continue;
    if (ends_with(key, ".url") || ends_with(key, ".pushurl")) value = url_without_secrets(value);
    if (key.rfind("user.", 0) == 0) has_user = true;
    kept.emplace_back(key, value);
  }
  // Sorted by section so each header is written once; order within a key is kept.
  std::stable_sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.first.substr(0, a.first.rfind('.')) < b.first.substr(0, b.first.rfind('.'));
  });
  for (const auto& [key, value] : kept) body += config_line(key, value, section);
  std::string out = "# Generated by Chock for this session from the repository's config, without secrets.\n";
  if (!has_user) out += std::string("[user]\n\tname = ") + kAgentName + "\n\temail = " + kAgentEmail + "\n";
  out += body;
  // A gc is the call's to run: not in the middle of another command.
  // info/ is the view's (read-only): a repack inside writes no server info there.
  out += "[gc]\n\tauto = 0\n[maintenance]\n\tauto = false\n[repack]\n\tupdateServerInfo = false\n";
  // A base an older Chock made shares files with others by hard links, and a
  // root caller's base made without the capability to give is chowned: both
  // move a file's ctime, so size, mtime and inode tell a change.
  out += "[core]\n\ttrustctime = false\n";
  // The session's index is split, its shared half the base's, read-only
  // (bases.cpp, make_split): every write makes a shared half of its own, and
  // the last one it made is all it keeps.
  out += "[splitIndex]\n\tmaxPercentChange = 0\n\tsharedIndexExpire = now\n";
  return out;
}

// Copies a small regular file of the real git dir into the view, if it is there.
Expected<void> copy_if_there(const std::string& from, const std::string& to) {
  auto text = fs::read_file_nofollow(from, 16 << 20);
  if (!text) return text.error().code == ENOENT ? Expected<void>{} : Expected<void>(std::move(text).error());
  return fs::write_file_if_changed(to, *text, 0644, fs::Durable::no);
}

// The objects of every tip not yet packed, as one more pack in the view. A
// tip made since the session began that reaches a denied path is left out
// of the view (its ref and its objects), and said. A changed deny list
// starts the store again: an older pack may hold what is now denied.
Expected<void> pack_reachable(const Session& s, const std::string& view, session_refs::Refs& refs,
                              Notes& notes) {
  std::string objects = view + "/objects";
  std::string denied;
  for (const auto& d : s.deny) denied += d + "\n";
  auto was = fs::read_file_nofollow(objects + "/denied", 1 << 20);
  if (!was || *was != denied) {
    if (auto r = fs::remove_tree(objects); !r) return r;
  }
  if (auto r = fs::make_dirs(objects + "/pack"); !r) return r;
  std::set<std::string> done;
  if (auto text = fs::read_file_nofollow(objects + "/packed-tips", 64 << 20); text)
    for (auto& t : git::split(*text, '\n')) done.insert(t);
  std::string exclude;
  for (const auto& d : done) exclude += "^" + d + "\n";
  git::Env env = git::repo_env(s.common_dir);
  std::set<std::string> wanted;
  if (!done.count(s.base)) wanted.insert(s.base);  // checked when the session was made
  for (auto it = refs.begin(); it != refs.end();) {
    const std::string oid = it->second;
    if (done.count(oid) || wanted.count(oid)) {
      ++it;
      continue;
    }
    std::vector<std::string> args{"--literal-pathspecs", "rev-list", "-1", oid};
    for (const auto& d : done) args.push_back("^" + d);
    args.emplace_back("--");
    args.insert(args.end(), s.deny.begin(), s.deny.end());
    auto holds = git::capture(args, env, "look for denied files in a new branch or tag");
    if (!holds) return std::move(holds).error();
    if (!holds->empty()) {
      notes.push_back(it->first +
                      " is not in this call's view of the repository: it holds a version of a denied file");
      it = refs.erase(it);
      continue;
    }
    wanted.insert(oid);
    ++it;
  }
  if (!wanted.empty()) {
    std::string revs;
    for (const auto& w : wanted) revs += w + "\n";
    env.stdin_data = revs + exclude;
    // --window=0: deltas already in the repository's packs are reused, none are searched for.
    if (auto r = git::capture({"pack-objects", "--revs", "-q", "--window=0", objects + "/pack/pack"}, env,
                              "pack the objects the session may read");
        !r)
      return std::move(r).error();
    done.insert(wanted.begin(), wanted.end());
    std::string text;
    for (const auto& d : done) text += d + "\n";
    if (auto r = fs::write_file_atomic(objects + "/packed-tips", text); !r) return r;
  }
  return fs::write_file_atomic(objects + "/denied", denied);
}

// The repository's branches and tags: what the view already says when the
// repository's refs are as they were when it was written (refs_stamp.hpp),
// else the refs now, with the stamp to keep once the view holds it
// (`stamp`, the refs' stamp taken now; left empty when kept as it is, or
// when none vouches).
Expected<session_refs::Refs> repository_refs(const Session& s, const std::string& view, std::string& stamp) {
  const std::string stamp_path = refs_stamp_path(s);
  if (!stamp.empty())
    if (auto was = fs::read_file_nofollow(stamp_path, 64 << 20); was && *was == stamp) {
      if (auto given = fs::read_file_nofollow(view + "/packed-refs", 64 << 20); given) {
        stamp.clear();  // kept as it is
        return session_refs::parse_packed(*given);
      }
    }
  // No stamp vouches for the view while it is rewritten: a crash between leaves none.
  if (::unlink(stamp_path.c_str()) != 0 && errno != ENOENT) return sys_error("unlink", stamp_path);
  // Plain files (most repositories): read as git would, no git process.
  // Else (a symbolic ref, a reftable: no stamp vouches for those) git lists them.
  if (auto direct = session_refs::repository_refs_from_files(s.common_dir)) return std::move(*direct);
  return session_refs::repository_refs(s.common_dir);
}

// common/<name> -> ../view/<name>, made again whatever the call left there.
Expected<void> link_common(const Session& s) {
  UniqueFd common(::open(s.common().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!common) return sys_error("open", s.common());
  for (const char* name : kViewLinks) {
    const std::string target = std::string("../view/") + name;
    struct stat st {};
    if (::fstatat(common.get(), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      if (S_ISLNK(st.st_mode)) {
        char now[64];
        const ssize_t n = ::readlinkat(common.get(), name, now, sizeof now);
        if (n >= 0 && std::string_view(now, static_cast<std::size_t>(n)) == target)
          continue;  // as Chock made it
      }
      if (S_ISDIR(st.st_mode)) {
        // A call replaced the link by a directory of its own: it goes.
        if (auto r = fs::remove_tree(fs::join(s.common(), name)); !r) return r;
      } else if (::unlinkat(common.get(), name, 0) != 0) {
        return sys_error("unlink", fs::join(s.common(), name));
      }
    }
    if (::symlinkat(target.c_str(), common.get(), name) != 0)
      return sys_error("symlink", fs::join(s.common(), name));
  }
  return {};
}

// The session's refs/ and packed-refs (session_refs.hpp): the real branches
// and tags brought up to date where the session left them as they were.
// What a call put in their place (a link, a file for a directory) goes.
Expected<void> update_own_refs(const Session& s, const std::string& view, const session_refs::Refs& real) {
  session_refs::Refs before;
  if (auto text = fs::read_file_nofollow(view + "/packed-refs", 64 << 20); text)
    before = session_refs::parse_packed(*text);
  const std::string packed = s.common() + "/packed-refs";
  const std::string refs = s.common() + "/refs";
  struct stat st {};
  // Not a file of the session's own (none yet, or a link of an older Chock): nothing was changed.
  session_refs::Refs session = before;
  if (::lstat(packed.c_str(), &st) == 0) {
    if (S_ISREG(st.st_mode)) {
      auto mine = session_refs::read(s);
      if (!mine) return std::move(mine).error();
      session = std::move(*mine);
    } else if (S_ISDIR(st.st_mode) ? !fs::remove_tree(packed) : ::unlink(packed.c_str()) != 0) {
      return sys_error("remove what the call left in place of packed-refs", packed);
    }
  }
  if (::lstat(refs.c_str(), &st) == 0 && !S_ISDIR(st.st_mode) && ::unlink(refs.c_str()) != 0)
    return sys_error("remove what the call left in place of refs/", refs);
  for (const char* d : {"", "/heads", "/tags"}) {
    if (auto r = fs::make_dirs(refs + d); !r) return r;
    if (auto r = give_to_owner(s, refs + d); !r) return r;
  }
  if (auto r = fs::write_file_if_changed(
          packed, session_refs::packed_text(session_refs::merge(before, real, session)));
      !r)
    return r;
  return give_to_owner(s, packed);
}

}  // namespace

std::string url_without_secrets(const std::string& url) {
  auto scheme = url.find("://");
  if (scheme == std::string::npos) return url;  // scp-like user@host:path names a user, holds no password
  std::size_t host = scheme + 3;
  std::size_t end = url.find_first_of("/?#", host);
  std::string authority = url.substr(host, end == std::string::npos ? std::string::npos : end - host);
  auto at = authority.rfind('@');
  if (at != std::string::npos) authority = authority.substr(at + 1);
  std::string rest = end == std::string::npos ? std::string() : url.substr(end);
  rest = rest.substr(0, rest.find_first_of("?#"));
  return url.substr(0, host) + authority + rest;
}

std::string view_dir(const Session& s) {
  return s.dir + "/git/view";
}

bool view_has_own_objects(const Session& s) {
  return !s.deny.empty();
}

Expected<void> write_common_config(const Session& s) {
  auto config = generated_config(s.common_dir);
  if (!config) return std::move(config).error();
  return fs::write_file_atomic(s.common() + "/config", *config);
}

Expected<void> refresh_view(const Session& s, Notes& notes) {
  std::string view = view_dir(s);
  // A session with a denied path always asks git: its view leaves out what
  // reaches the denied file, and says so each call.
  const std::string refs_now = s.deny.empty() ? refs_stamp::take(s.common_dir) : std::string();
  // Most calls: the repository's refs, the session's and the view as the
  // last refresh left them, vouched for by stamps (no file read but two).
  const std::string view_stamp_path_now = view_stamp_path(s);
  if (!refs_now.empty())
    if (auto was = fs::read_file_nofollow(view_stamp_path_now, 64 << 20); was && was->starts_with(refs_now))
      if (const std::string inputs = view_inputs_stamp(s); !inputs.empty() && *was == refs_now + inputs)
        return {};
  // None vouches for the view while it is refreshed: a crash between leaves none.
  if (::unlink(view_stamp_path_now.c_str()) != 0 && errno != ENOENT)
    return sys_error("unlink", view_stamp_path_now);
  for (const char* d : {"", "/refs", "/refs/heads", "/refs/tags", "/info", "/hooks"})
    if (auto r = fs::make_dirs(view + d); !r) return r;
  std::string stamp = refs_now;
  auto refs = repository_refs(s, view, stamp);
  if (!refs) return std::move(refs).error();
  if (view_has_own_objects(s)) {
    if (auto r = pack_reachable(s, view, *refs, notes); !r) return r;
  }
  if (auto r = update_own_refs(s, view, *refs); !r) return r;
  // What the view says now is where the next call's merge starts from.
  if (auto r = fs::write_file_if_changed(view + "/packed-refs", session_refs::packed_text(*refs), 0644,
                                         fs::Durable::no);
      !r)
    return r;
  if (!stamp.empty())
    if (auto r = fs::write_file_atomic(refs_stamp_path(s), stamp, 0644, fs::Durable::no); !r) return r;
  if (auto r = fs::write_file_if_changed(view + "/HEAD", s.base + "\n", 0644, fs::Durable::no); !r) return r;
  if (auto r = copy_if_there(s.common_dir + "/shallow", view + "/shallow"); !r) return r;
  for (const char* f : {"/info/exclude", "/info/attributes"})
    if (auto r = copy_if_there(s.common_dir + f, view + f); !r) return r;
  // A session made before the view included the real config: its config is made again.
  auto config = fs::read_file_nofollow(s.common() + "/config", 1 << 20);
  if (!config || config->find("../repo/config") != std::string::npos)
    if (auto r = write_common_config(s); !r) return r;
  if (auto r = link_common(s); !r) return r;
  // Taken after the refresh (what it repaired is as it leaves it); the
  // refs' stamp from before it, as the view was made from those refs.
  if (!refs_now.empty())
    if (const std::string inputs = view_inputs_stamp(s); !inputs.empty())
      return fs::write_file_atomic(view_stamp_path_now, refs_now + inputs, 0644, fs::Durable::no);
  return {};
}

}  // namespace chock::workspace::build
