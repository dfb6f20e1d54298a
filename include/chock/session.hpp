// A tool call in a session: the one engine `chock run`, `chock run
// --background`, `chock mcp` and a program embedding libchock share.
//
// A call opens its session (or makes one), reads the configuration layers,
// chooses the toolchain, builds the sandbox's Config (workspace, network
// judge, devices, limits, disk guard), runs the program, watches it, logs
// it, and ends a session of one call that left nothing. What only a person
// (or whoever stands in for them) can do arrives through Hooks: answering a
// policy question, seeing Chock's own lines, progress, the program's output.
//
// Calls of one session may run at once: they share the session's workspace
// (one mount of its overlay, where the session keeps one between calls),
// as two shells in one checkout do. What changes the session as a whole
// (apply, adopt, its removal, a newly denied file's notice, a newly carried
// directory) takes the session alone and waits for its calls.
//
// Nothing here re-executes the program that embeds it: the processes a
// session keeps beside its calls (the overlay's holder, the trash's sweeper,
// a background call's runner) are `chock-helper`, a program of Chock's own
// found beside the running binary or in Chock's libexec directory.
#pragma once

#include <chock/config.hpp>
#include <chock/error.hpp>
#include <chock/result.hpp>
#include <chock/sandbox.hpp>

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace chock::session {

struct Request {
  std::string project;          // a directory of the project (default: the current one)
  std::string session;          // continue this session; empty: a new one
  bool keep = false;            // a new session stays even when its call leaves nothing
  bool background = false;      // a task of the session: wait() answers once it is started
  bool allow_dirty = false;     // a new git session starts from the uncommitted work too
  bool host_toolchain = false;  // the host's /usr even where the project has a Nix dev shell
  std::vector<std::string> argv;
  std::vector<std::string> env;    // K=V over the call's environment
  std::vector<std::string> deny;   // project files covered by the deny notice (added to the session's)
  std::vector<std::string> carry;  // ignored directories shown copy-on-write (added to the session's)
  // "[HOST_PORT:]CALL_PORT": the call's 127.0.0.1:CALL_PORT reached from the
  // host's 127.0.0.1:HOST_PORT (and [::1]) for as long as the program runs.
  std::vector<std::string> publish;
  std::optional<Network> network;                    // nullopt: the project's .network, else none
  std::optional<std::chrono::milliseconds> timeout;  // nullopt: the layers' deadline (30 min unless lowered)
  // Where the call starts: a directory of the project, relative to its top or
  // absolute below it. Empty: `project` itself (or the current directory).
  std::string cwd;
  // The program's stdin, stdout and stderr: the caller's descriptors,
  // borrowed. stdin is /dev/null unless `pass_stdin` (or `input`).
  std::array<int, 3> stdio{0, 1, 2};
  bool pass_stdin = false;
  std::optional<std::string> input;  // set: the program's stdin is these bytes, then its end
  // Readable: the call is cancelled (a caller's signalfd); borrowed.
  int cancel_fd = -1;
  // A wrapped MCP server's environment: PATH, LANG, TERM, HOME, TMPDIR and
  // Chock's own variables, nothing of the caller's sanitizer settings.
  bool plain_env = false;
  // chock-helper at /run/chock/bin/chock-helper, read-only: the fixed
  // program of the MCP file tools runs inside their call.
  bool helper_inside = false;
  // The configuration layers beside the project's chock.zon.
  std::string org_bundle;                 // empty: /etc/chock/bundle.zon if present
  std::vector<std::string> policy_rules;  // ACTION=DECISION, narrowing only
};

// A person's answer to a policy question.
struct Answer {
  bool approved = false;
  bool always = false;  // and for the rest of the session
  std::string refusal;  // not approved: why, in words
};

struct Hooks {
  // Asks whoever stands for the person about `action` ("net.connect.com.example.443");
  // `what` says what would happen (escaped); `offer_always`: "always for this
  // session" may be answered; `cancel_fd` (or -1): readable once the call is
  // ending (cancelled, timed out, over), when the question is moot and the
  // answer no. Unset: nobody can be asked, and a rule that asks is a
  // refusal that says which row to add.
  using Ask = std::function<Answer(const std::string& action, const std::string& what, bool offer_always,
                                   int cancel_fd)>;
  Ask ask;
  // Chock's own lines ("session 2m3xk9ab (git worktree of /p); ..."), one
  // at a time, without the "chock: " prefix; anything a call wrote in them
  // is escaped.
  std::function<void(const std::string& line)> say;
  // How far a long step of making the workspace has come (workspace::Progress).
  std::function<void(const std::string& what, std::uint64_t done, std::uint64_t total)> progress;
  std::uint32_t progress_after_ms = 1000;
  // Set: the program's stdout (1) and stderr (2) arrive here as they come,
  // from a thread of the engine, instead of going to stdio[1] and stdio[2].
  std::function<void(int stream, std::string_view bytes)> output;
  // The session is open: its id, and whether this call made it.
  std::function<void(const std::string& session, bool created)> opened;
  // The program has started (a terminal relay starts relaying here).
  std::function<void()> started;
  // Every process of the call has ended; said before any line about its end.
  std::function<void()> ended;
  // Asked, with its id, before a session of one call is ended (removed when
  // it left no commit or changed path): work the engine does not count that
  // keeps it all the same, in words, said as `session ID kept: ...`; "" lets
  // the engine decide. A wrapped MCP server's uncommitted changes in a git
  // session are such work: nothing inside it commits them.
  std::function<std::string(const std::string& session)> work_beyond_commits;
};

struct Outcome {
  std::string session;
  std::string project;                 // the project's top level
  bool created = false;                // this call made the session
  bool removed = false;                // a session of one call that left nothing, removed after it
  std::string task;                    // background: the task's id ("<session>-NN")
  std::vector<std::string> published;  // each published port's URL on the host ("http://127.0.0.1:41017/")
  std::optional<Result> result;        // foreground: how the call ended
  // Which deadline applied, in words: "30 min (Chock's default; ...)".
  std::string deadline;
};

// One call. wait() runs it on the calling thread, unless start() already
// runs it on a thread of its own; cancel() may come from any thread at any
// time, and ends the call's whole process tree (an outcome that says so),
// or stops it before it starts (an error that says so).
class Call {
 public:
  explicit Call(Request request, Hooks hooks = {});
  ~Call();  // cancels what still runs, and waits for it
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Before start() or wait(): the sandbox of prepare(), begun while the
  // caller waited for this call (an agent thinking); used for this call
  // alone, and begun anew where the call's identity or limits differ.
  void use(Begun prepared);
  void start();
  Expected<Outcome> wait();
  void cancel() noexcept;

  struct Impl;
  Impl& impl() noexcept { return *impl_; }  // the engine's own (a background call's runner)

 private:
  std::unique_ptr<Impl> impl_;
};

// Call(request, hooks).wait().
Expected<Outcome> call(Request request, Hooks hooks = {});

// A sandbox begun for the next call like `request` (who it runs as, its
// network, its limits): most of a call's start, done in the kernel while
// nothing waits for it. The process that holds its first process is the
// thread that calls this, which must outlive the call it is used for.
[[nodiscard]] Expected<Begun> prepare(const Request& request);

// What Chock says of a call's end beyond its exit status: a setup step that
// failed, a command not found, a timeout (`deadline` names which), a cancel,
// a limit that killed it, a signal, the network or write-xor-execute
// refusals behind a program's own words. One line each, without "chock: ".
// A network line on a call whose program exited 0 is a note, not a cause:
// it begins "note: " and says the program went on; on any other end it is
// said as it is (it may be why the program failed). `said` (unset: none)
// leaves out a refusal said already while the call ran.
[[nodiscard]] std::vector<std::string> end_lines(const Result& result, const std::vector<std::string>& argv,
                                                 const std::string& deadline = {},
                                                 const std::function<bool(const std::string&)>& said = {});

}  // namespace chock::session
