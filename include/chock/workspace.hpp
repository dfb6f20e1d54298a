// The workspace: the throwaway copy of the project a tool call runs in, and
// the only ways work gets back (apply for git, adopt for everything else).
//
// What a session keeps in the data directory (workspaces/<id>/, bases/,
// trash/, git-cache/), how a call's git sees the repository, and how a root
// caller's calls get a workspace they can write: docs/architecture.md, "The
// data directory".
#pragma once

#include <sys/types.h>

#include <chock/config.hpp>
#include <chock/error.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace chock::workspace {

// What stands in place of a denied file (--deny PATH), byte for byte.
inline constexpr const char* kDenyNotice =
    "chock: this file is denied by the project. Its bytes are not in this sandbox.\n";
// Who commits made inside are by, unless the repository configures a user.
inline constexpr const char* kAgentName = "Chock Agent";
inline constexpr const char* kAgentEmail = "agent@chock.invalid";
// The uid a root caller's tool call runs as unless Config::user says otherwise.
inline constexpr uid_t kDefaultRunUid = 65534;
// Where the git admin and common dirs appear inside the sandbox.
inline constexpr const char* kSandboxGitRoot = "/run/chock/git";

enum class Kind { git, overlay };
const char* kind_name(Kind kind);

struct Session {
  std::string id;
  Kind kind = Kind::git;
  std::string project;            // absolute real path of the project (a git project: its top level)
  std::string dir;                // <data dir>/workspaces/<id>
  uid_t owner = 0;                // the uid the workspace files belong to
  std::vector<std::string> deny;  // project-relative files covered by the notice
  // Carried directories (.carry, --carry). git: ignored directories shown
  // copy-on-write (carry/<index>/); overlay: directories the workspace shows
  // already, named so that what a call writes there is not work. Either way
  // what a call writes there stays for the session's calls and is never work:
  // no changed path, no reason to keep a session, nothing adopt or apply takes.
  std::vector<std::string> carry;
  // A root caller's carried directories, idmapped (as lower_shift), by index; shorter: none.
  std::vector<std::optional<OwnerShift>> carry_shift;
  std::int64_t created = 0;   // unix seconds
  std::int64_t last_run = 0;  // unix seconds of the last call (past an adopt's); 0 none
  // git
  std::string common_dir;  // the real repository's common dir (host path)
  std::string base;        // the commit the worktree was made at
  // The shared base its tree is an overlay over ("<uid>-<commit>", bases.hpp):
  // upper/ and work/ are its own layers. Empty: tree/ is a checkout of its own
  // (sessions made with --allow-dirty, and before shared bases).
  std::string shared_base;
  // The base's shared index its admin dir links ("sharedindex.<hash>"),
  // bound read-only in each call. Empty: the index is all its own (a copy).
  std::string shared_index;
  // The admin dir inside is an overlay over index-below/, which holds a link
  // to the base's index: the session has an index of its own only once its
  // git writes one. False: the admin dir is bound as it is (sessions made
  // before, and those with a shared index).
  bool index_below = false;
  std::string applied;  // the last session commit that reached the branch; empty none
  // overlay
  std::string lower;                      // the lower layer: the project itself, or a root caller's copy
  std::optional<OwnerShift> lower_shift;  // a root caller's project, idmapped: its owner shown as `owner`
  std::int64_t adopted_run = -1;          // last_run as it was at the last adopt; -1 never
  // Actions the person answered `a` (always, for this session) when the policy asked.
  std::vector<std::string> always;
  // Made to last (--keep, a background task, chock mcp): prune leaves it
  // unless it is named or --older-than says (prune_verdict).
  bool kept = false;

  [[nodiscard]] std::string tree() const { return dir + "/tree"; }
  [[nodiscard]] std::string admin() const { return dir + "/git/admin"; }
  [[nodiscard]] std::string common() const { return dir + "/git/common"; }
  [[nodiscard]] std::string objects() const { return dir + "/git/common/objects"; }
  [[nodiscard]] std::string upper() const { return dir + "/upper"; }
  [[nodiscard]] std::string work() const { return dir + "/work"; }
  friend bool operator==(const Session&, const Session&) = default;
};

// $XDG_DATA_HOME/chock, else $HOME/.local/share/chock.
Expected<std::string> data_dir();

// What a call of a session sees besides its workspace:
//   /run/chock/cache    the project's toolchain cache, read-write, kept across
//                       calls and sessions ($XDG_CACHE_HOME/chock/<project>/):
//                       HOME is its home/, XDG_CACHE_HOME home/.cache
//   /run/chock/scratch  the session's scratchpad (<session dir>/scratch),
//                       read-write, kept for the session's calls:
//                       CHOCK_SCRATCHPAD names it
inline constexpr const char* kCacheInside = "/run/chock/cache";
inline constexpr const char* kScratchInside = "/run/chock/scratch";
Expected<std::string> cache_dir(const std::string& project);  // the host path, made or not
std::string scratch_dir(const Session& session);
// <session dir>/tasks: the background calls' records, written by Chock's
// runner; read-only at /run/chock/tasks in every call of the session.
inline constexpr const char* kTasksInside = "/run/chock/tasks";
std::string tasks_dir(const Session& session);
// Makes both (the cache once, for the session's owner), binds them and sets
// the environment; the cache's host path.
Expected<std::string> add_call_dirs(const Session& session, Config& config);
// Removes the project's cache; false when there was none.
Expected<bool> clear_cache(const std::string& project);

// An exclusive flock on a session, released when destroyed.
class SessionLock {
 public:
  SessionLock() = default;
  explicit SessionLock(int fd) noexcept : fd_(fd) {}
  SessionLock(SessionLock&& other) noexcept;
  SessionLock& operator=(SessionLock&& other) noexcept;
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;
  ~SessionLock();
  [[nodiscard]] int fd() const noexcept { return fd_; }

 private:
  int fd_ = -1;
};

// Checks a --session value: 1 to 64 of [a-z0-9_-], starting with a letter or digit.
Expected<void> validate_session_id(const std::string& id);
// A new random session id (8 characters of [a-z2-9], a letter first): for a
// session's directory, or for a log of its own (`chock fetch` without --session).
Expected<std::string> random_session_id();
// Checks a --deny value: a relative path of a file, no `..` or `.`
// component, no glob character, no trailing slash, nothing inside .git.
Expected<void> validate_deny_path(const std::string& path);
// Checks a --carry value (or a .carry entry): a relative path of a
// directory, no `..` or `.` component, no glob, nothing named .git.
Expected<void> validate_carry_path(const std::string& path);

// Told how far a long step of making a workspace has come (files done of
// files total), from a thread of Chock's, every 250 ms once the step has run
// a second; the last report of a step has done == total. Quick steps say nothing.
using Progress = std::function<void(const std::string& what, std::uint64_t done, std::uint64_t total)>;

struct OpenOptions {
  std::string project;       // empty: the current directory
  std::string session;       // empty: make a new session
  bool allow_dirty = false;  // git: carry uncommitted work in (new sessions only)
  // git: over a settled base, link its index's shared half rather than copy
  // the index (the operator's .link_base_index; libgit2 cannot read it).
  bool link_base_index = false;
  std::vector<std::string> deny;  // files to cover (added to the session's list)
  // Those of `deny` that may be missing from the project (the organisation's,
  // which name no project); any other missing one refuses the open.
  std::vector<std::string> deny_may_be_missing;
  std::vector<std::string> carry;  // directories to carry (added to the session's list)
  bool keep = false;               // a new session is made to last (Session::kept)
  std::optional<uid_t> run_uid;    // root callers: who the call runs as (default 65534)
  // Set: a call runs now (unix seconds), kept as the session's last_run in
  // the one write of session.json the open makes, before the call can write.
  std::int64_t last_run = 0;
  Progress progress;                       // empty: no reports
  std::uint32_t progress_after_ms = 1000;  // a step reports once it has run this long (0: from its start)
  // `project` is what project_root() returned: a session that exists (and
  // denies nothing new) only checks it belongs there, without looking again.
  bool project_is_root = false;
  // A call: the session is held shared with its other calls (lock_shared),
  // unless this open changes it as a whole (a new deny or carry, a denied
  // file's notice to write again): then alone, waiting for its calls. A new
  // session is made alone, then shared.
  bool shared = false;
};

struct Opened {
  Session session;
  SessionLock lock;  // held for the whole call
  bool created = false;
  std::vector<std::string> notes;  // one line each, for stderr: what was skipped, warnings
  bool alone = true;               // `lock` holds the session alone (else shared with its other calls)
  // A new git session: directories of kCarriable at the project's top that
  // git ignores and the session does not carry (it lacks them).
  std::vector<std::string> uncarried;
};

// The directories Chock knows projects install dependencies or builds into,
// ignored by git, that a git session lacks unless .carry names them: a new
// git session says which of them the project holds and does not carry.
inline constexpr const char* kCarriable[] = {"node_modules", ".venv", "venv", "vendor", "target"};

// The project `dir` belongs to: its git top level, else `dir` itself, as an
// absolute real path. Where the project's chock.zon is read from.
Expected<std::string> project_root(const std::string& dir);

// Opens (or makes) the session a call runs in, and locks it.
Expected<Opened> open(const OpenOptions& options);
// Reads a session by id (no lock).
Expected<Session> load(const std::string& id);
// The session alone (exclusive): what changes it as a whole (apply, adopt,
// its removal) waits for its calls, or is refused at once (`wait` false).
Expected<SessionLock> lock(const Session& session, bool wait);
// The session shared with its other calls: a call holds this while it
// runs; it waits only while someone holds the session alone.
Expected<SessionLock> lock_shared(const Session& session);
// Around a read, change and write of session.json by a call (which holds
// the session shared only): one at a time.
Expected<SessionLock> lock_record(const Session& session);
// The session's mounts lock, taken right before a call's sandbox is made
// and kept until the kernel has taken that sandbox down, past the call's
// own exit (Child::hand_teardown_to): the session's overlays have one mount
// at a time. A call takes it `shared` when it attaches the mount the
// session's holder keeps (one mount for every call, which no new mount may
// replace while a call uses it), or alone when it makes that mount in the
// session's own work directories (share() once the holder keeps it).
// Waited for at most `within`: then an empty hold, and the call mounts
// beside the others (work_beside), holding nothing.
struct MountsHold {
  enum How { none, shared, alone };
  SessionLock lock;
  How how = none;
  void share() noexcept;
};
Expected<MountsHold> hold_mounts_for_call(const Session& session, bool shared,
                                          std::chrono::milliseconds within);
// An overlay of the session mounted beside the session's own mount (a task,
// a call while others run): in a work directory of its own (work/t-<nonce>),
// left to the session's removal.
Expected<void> work_beside(Overlay& overlay);
// overlayfs removes the `work` directory the last mount left in its work
// directory before it makes its own, and that removal (a block freed: on a
// file system mounted with `discard`, a wait for the disk) was on the call's
// way in. Under the mounts lock, before the call's mount, the session's are
// set aside (renamed to work/spent.<nonce>); remove_set_aside_work deletes
// them, and any an earlier call left, once the call has started. Failures
// leave them to overlayfs, or to the next call.
// (Not those in `held_work`: an overlay kept mounted since the last call
// works in it still.)
void set_aside_work(const Session& session, const std::vector<std::string>& held_work = {});
void remove_set_aside_work(const Session& session);
// Writes session.json back (unless it holds this already).
Expected<void> save(const Session& session);

// Who will mount what add_to_config asks for: a call, one at a time under
// the mounts lock (`kept_call`: of a session that outlives it, whose overlay
// over a shared base is then kept mounted for the next call), or a task,
// beside the calls after it.
enum class Mounter { call, kept_call, task };

// Adds the workspace to a sandbox config: the tree (or the overlay) at the
// project's own path, the git dirs under /run/chock/git, cwd, identity env.
// `host_cwd` is the caller's directory; inside, the call starts at the same
// path when it is in the project, else at the project's root. A task's
// overlays get work directories of their own, made here (work/t-<nonce>).
Expected<void> add_to_config(const Session& session, const std::string& host_cwd, Config& config,
                             Mounter mounter = Mounter::call);

// --- apply (git) --------------------------------------------------------------

enum class Mode { merge, rebase, squash };
Expected<Mode> parse_mode(const std::string& name);

// What apply is about to do; shown in the question and given to the seam.
struct ApplyPlan {
  std::string session;
  std::string project;
  std::string branch;  // refs/heads/... checked out in the project
  std::string tip;     // the branch's commit when the question was asked
  std::string head;    // the session's newest commit
  std::string parked;  // refs/chock/<session>
  Mode mode = Mode::merge;
  bool fast_forward = false;         // the branch has not moved since the session's base
  std::vector<std::string> commits;  // "<short> <subject>", oldest first (raw: escape to show)
  std::vector<std::string> paths;    // "<path> (+added -removed)" of every path the commits change (raw)
  // The files Chock reads as configuration (chock.zon) that the commits add,
  // change or remove, and their diff. Non-empty: see Approval::configuration.
  std::vector<std::string> configuration;
  std::string configuration_diff;
};

// Files of the project Chock reads as configuration: a commit range that
// touches one changes every later call. chock.zon is the policy; flake.nix,
// flake.lock and shell.nix are evaluated by Nix on the host side, outside
// any sandbox, to make the toolchain. The rest are agents' project-scoped
// MCP configurations: the argv of `chock mcp` they hold may carry
// --policy-rule rows, which are the person's and widen the project's, so a
// call must not write them by a commit the person did not read.
inline constexpr const char* kConfigurationFiles[] = {"chock.zon",
                                                      "flake.nix",
                                                      "flake.lock",
                                                      "shell.nix",
                                                      ".mcp.json",
                                                      ".cursor/mcp.json",
                                                      ".vscode/mcp.json",
                                                      ".vscode/settings.json",
                                                      ".gemini/settings.json",
                                                      ".codex/config.toml",
                                                      ".zed/settings.json",
                                                      ".claude/settings.json"};

// Says whether to go ahead. The command line answers from the
// workspace.apply policy row, --yes or a terminal prompt (return false to
// refuse; `refusal` then says why and how to apply). When the plan changes
// configuration, `configuration` must be set too: the person saw the diff
// and said yes to it on a terminal. No policy row, --yes or remembered
// answer may set it; without it apply refuses and the work stays parked.
struct Approval {
  bool approved = false;
  std::string refusal;
  bool configuration = false;
};
using Approve = std::function<Approval(const ApplyPlan&)>;

struct ApplyOutcome {
  enum class State { applied, nothing, refused };
  State state = State::nothing;
  std::string message;  // one or more lines for the person
  std::string commit;   // applied: the branch's new commit
};

// Parks the session's commits at refs/chock/<id>, then integrates them onto
// the checked-out branch as a fast-forward on a clean tree. Every refusal
// leaves the work parked and says where.
Expected<ApplyOutcome> apply(const std::string& id, Mode mode, const Approve& approve);

// --- adopt (overlay) -----------------------------------------------------------

struct AdoptReport {
  std::string destination;  // <project>/.chock-adopted/<id>
  std::string list_file;    // <project>/.chock-adopted/<id>.txt (paths escaped, see its first line)
  uid_t owner = 0;          // who the adopted files belong to (the project's owner for a root caller)
  std::vector<std::string> changed, added, deleted;
  std::vector<std::pair<std::string, std::string>> skipped;  // path, why
};

// Copies what the call changed (the overlay's upper layer) into
// <project>/.chock-adopted/<id>/ and writes the list of every path beside it.
// Adopted files carry permission bits only (0755 when executable, else
// 0644), never setuid, setgid or sticky; a root caller's belong to the
// project directory's owner. Nothing is followed through a link the call made.
Expected<AdoptReport> adopt(const std::string& id);

// --- list, remove, clear -------------------------------------------------------

struct SessionInfo {
  Session session;
  // git: commits not yet applied; overlay: changed paths not adopted since the last call
  std::uint64_t pending = 0;
  std::uint64_t size_bytes = 0;
  std::string problem;  // set when the session could not be read completely
};

Expected<std::vector<SessionInfo>> list();

// When a session was last used: its last call, else when it was made.
std::int64_t last_use(const Session& session);

// What `chock workspace prune` does with a session. Work is never pruned
// (unapplied commits or changed paths, or work that cannot be counted).
// Otherwise a session named is removed; with --older-than, a session last
// used before then is; with neither, a session is removed unless it was
// made to last (Session::kept) or used in the last day.
struct PruneAsk {
  std::vector<std::string> named;                  // empty: every session
  std::optional<std::int64_t> older_than_seconds;  // --older-than
};
inline constexpr std::int64_t kRecentUseSeconds = 86400;
enum class PruneVerdict { remove, not_asked, keep_work, keep_recent, keep_kept };
PruneVerdict prune_verdict(const SessionInfo& info, const PruneAsk& ask, std::int64_t now);
// Refuses while work is pending unless `force`; a forced removal of a git
// session parks its commits at refs/chock/<id> first, so no commit is lost.
// Returns what was done, for the person.
Expected<std::string> remove(const std::string& id, bool force);

// The end of a session of one call (`chock run` without --session): it is
// removed when it holds nothing to keep (git: no commit that is not applied;
// overlay: no change), else kept. Never removes work, and keeps the session
// when another call holds it or its work cannot be counted.
struct Ending {
  bool removed = false;
  std::uint64_t pending = 0;  // what it keeps: commits (git) or changed paths (overlay)
  std::string problem;        // why it is kept although nothing could be counted
};
Expected<Ending> remove_if_empty(const std::string& id);

// remove and remove_if_empty rename the session's directory into
// <data dir>/trash/ and return; this deletes what is there (what they let go,
// never work). One sweeper at a time: a second waits for the first, then
// deletes what arrived meanwhile. Returns the entries deleted. The CLI starts
// it in the background after a removal (`chock workspace sweep`).
Expected<std::size_t> sweep_trash();

// Shared bases (one checkout per commit that git sessions are overlays
// over): gc removes, into the trash, every base no session uses that was
// last used more than `older_than_seconds` ago, and what unfinished makings
// of a base left; then, while the bases left take more than `max_bytes`,
// the unused one used least recently, whatever its age. A base a session
// uses, one held for a session being made and one other bases stack on are
// never removed. A base's size is counted once (kept in bases/<key>.size
// beside its lock: a base never changes); a derived base's is its own layer's.
struct BasesCollected {
  std::vector<std::string> removed;  // "<uid>-<commit>" (or the leftover's name)
  std::uint64_t freed_bytes = 0;
  std::size_t kept_in_use = 0;
  std::size_t kept_recent = 0;
  std::size_t removed_for_size = 0;  // of `removed`, those only the size cap removed
  std::uint64_t kept_bytes = 0;      // what the bases left take
};
Expected<BasesCollected> collect_bases(std::int64_t older_than_seconds,
                                       std::optional<std::uint64_t> max_bytes = std::nullopt);

}  // namespace chock::workspace
