// The call in a session (chock/session.hpp): from the request to its end.
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <ctime>
#include <utility>

#include "chock/sandbox.hpp"
#include "chock/workspace.hpp"
#include "log/session_log.hpp"
#include "session/call_config.hpp"
#include "session/call_impl.hpp"
#include "session/ending.hpp"
#include "session/mounts.hpp"
#include "session/net_rules.hpp"
#include "session/program_io.hpp"
#include "session/published.hpp"
#include "session/tasks.hpp"
#include "session/toolchain_choice.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"
#include "util/sha256.hpp"

namespace chock {

namespace session {

namespace {

Error cancelled_before_start() {
  return Error{"the call was cancelled before it started", "", ECANCELED};
}

// What the call is decided by: the project, where it starts, the layers,
// its network.
Expected<CallContext> read_context(const Request& r) {
  CallContext c;
  c.start = current_dir();
  if (char real[PATH_MAX]; !r.project.empty() && ::realpath(r.project.c_str(), real) != nullptr)
    c.start = real;
  auto root = workspace::project_root(r.project.empty() ? c.start : r.project);
  if (!root) return std::move(root).error();
  c.root = *root;
  if (!r.cwd.empty()) {
    auto inside = start_inside(c.root, r.cwd);
    if (!inside) return std::move(inside).error();
    c.start = *inside;
  }
  config::LayerOptions options{c.root, r.org_bundle, r.policy_rules};
  auto layers = config::load_layers(options);
  if (!layers) return std::move(layers).error();
  c.layers = std::move(*layers);
  c.network = r.network.value_or(c.layers.project.network.value_or(Network::none));
  // sandbox.jit is read before the call starts: nobody is asked, so only allow relaxes.
  c.jit = c.layers.table.decide(policy::kSandboxJit);
  return c;
}

// What a call's sandbox is begun with before its session is open.
Config early_config(const CallContext& c) {
  Config early;
  early.network = c.network;
  early.limits = call_limits(c.layers.limits());
  if (::geteuid() == 0) early.user = workspace::kDefaultRunUid;
  return early;
}

// The session's first lines, and what its log says of the call's setting.
void open_lines(const Request& r, const CallContext& c, const workspace::Opened& opened,
                log::SessionEvents& events, const Say& say) {
  const workspace::Session& s = opened.session;
  // First: a git session that lacks the project's installed dependencies
  // fails as "mocha: not found", which names no cause.
  if (!opened.uncarried.empty()) say(printable(uncarried_line(opened.uncarried, c.layers.project)));
  for (const auto& note : opened.notes) say(printable(note));
  const config::EffectiveLimits limits = c.layers.limits();
  if (opened.created) {
    const std::string lasts = r.keep || r.background
                                  ? "continue it with --session " + s.id
                                  : std::string("a session of one call: kept only if it leaves work");
    say("session " + s.id + " (" + (s.kind == workspace::Kind::git ? "git worktree" : "overlay") +
        " workspace of " + printable(s.project) + "); " + lasts);
    // Said once, when the session is made: the ceiling holds on every call.
    for (const auto& notice : limits.notices) say(notice);
    events.add("session.start", {{"project", s.project}, {"kind", workspace::kind_name(s.kind)}});
  }
  nlohmann::json cli_rules = nlohmann::json::array();
  for (const auto& rule : c.layers.command_line) cli_rules.push_back(rule.origin);
  events.add("session.config", {{"chock_zon", c.layers.project.path.empty()
                                                  ? nlohmann::json(nullptr)
                                                  : nlohmann::json(sha256_hex(c.layers.project.bytes))},
                                {"allow_dirty", r.allow_dirty},
                                {"policy_rules", cli_rules},
                                {"limit_notices", limits.notices}});
  events.add("workspace.open", {{"kind", workspace::kind_name(s.kind)},
                                {"created", opened.created},
                                {"base", s.base},
                                {"deny", s.deny}});
}

// The answers `always` given during the call, kept in session.json.
void keep_always(const workspace::Session& s, const NetRules& rules, const Say& say) {
  if (rules.new_always().empty()) return;
  auto record = workspace::lock_record(s);
  auto fresh = record ? workspace::load(s.id) : Expected<workspace::Session>(record.error());
  if (fresh) {
    for (const auto& a : rules.new_always())
      if (std::find(fresh->always.begin(), fresh->always.end(), a) == fresh->always.end())
        fresh->always.push_back(a);
    if (auto saved = workspace::save(*fresh); saved)
      return;
    else
      say("warning: could not keep the answer: " + saved.error().message());
    return;
  }
  say("warning: could not keep the answer: " + fresh.error().message());
}

}  // namespace

// One call in its opened session.
class InSession {
 public:
  InSession(Call::Impl& call, const CallContext& context, workspace::Opened& opened,
            std::optional<Begun> begun)
      : c_(call), context_(context), opened_(opened), begun_(std::move(begun)) {}

  Expected<Outcome> run(Outcome out) {
    const Say say = [this](const std::string& line) { c_.say(line); };
    workspace::Session& s = opened_.session;
    log::SessionEvents events(s.project, s.id, say);
    // Written while the sandbox starts (while_entering below), in the room the last call reserved.
    events.hold();
    open_lines(c_.request, context_, opened_, events, say);
    // Decided and bound by the call the person asked (a task's runner has
    // them from it): a refusal or a port taken ends the call before it starts.
    std::vector<net::Published> published = std::move(c_.published);
    if (published.empty()) {
      auto opened = open_published(c_.request.publish, context_.network, context_.layers.table, c_.hooks.ask);
      if (!opened) {
        events.release();
        return std::move(opened).error();
      }
      published = std::move(*opened);
    }
    for (const auto& p : published) out.published.push_back(p.url());
    for (const auto& p : published)
      say("published " + p.url() + " -> the call's 127.0.0.1:" + std::to_string(p.call_port) +
          " (the host's loopback only; it closes when the program ends)");
    if (c_.request.background) {
      events.release();
      // The runner starts where this call would, on the network decided here.
      Request background = c_.request;
      background.project = context_.start;
      background.cwd.clear();
      background.network = context_.network;
      background.session = s.id;
      auto task = start_task(s, background, published);
      if (!task) return std::move(task).error();
      say("task " + *task + " started; `chock tasks wait " + *task + "` waits for it, its calls read it at " +
          workspace::kTasksInside);
      out.task = *task;
      return out;
    }
    const bool task = c_.as_task.has_value();
    // A session that outlives this call keeps its overlay mounted for the next.
    const bool one_call = opened_.created && !c_.request.keep;
    const auto mounter = task       ? workspace::Mounter::task
                         : one_call ? workspace::Mounter::call
                                    : workspace::Mounter::kept_call;
    auto built = build_config(c_.request, context_, opened_, mounter, events, say);
    if (!built) return std::move(built).error();
    Config& config = built->config;
    out.deadline = built->deadline;
    events.add("sandbox.open", {{"write_execute", config.allow_jit ? "relaxed" : "strict"},
                                {"sandbox_jit", rule_json(context_.jit)},
                                {"network", network_name(config.network)},
                                {"toolchain", toolchain_json(context_.shell)}});
    events.add("tool.call", {{"argv", config.argv},
                             {"cwd", config.cwd},
                             {"timeout_ms", config.timeout ? config.timeout->count() : 0}});
    auto guard = disk_guard(s.dir, context_.layers.limits().disk_bytes);
    if (!guard) return std::move(guard).error();
    config.disk = std::move(*guard);
    events.reserve(64ULL * 1024);
    // A filtered call's names and connections are judged by the policy table,
    // asked of whoever stands for the person, and logged as they happen.
    NetRules net_rules(context_.layers.table, s.always, true, c_.hooks.ask);
    LiveRefusals live(say);
    if (config.network == Network::filtered) {
      net::JudgeOptions judge_options;
      judge_options.refused = [&live](const std::string& line) { live(line); };
      judge_options.allowed_private = private_ranges(context_.layers.operator_file);
      judge_options.record = [&events](std::string_view event, const nlohmann::json& fields) {
        events.add(event, fields);
      };
      config.judge = call_judge(net_rules, std::move(judge_options));
      add_connect_client(config);
    }
    if (task)
      if (auto r = c_.as_task->prepare(config); !r) return std::move(r).error();
    auto io = ProgramIo::prepare(c_.request.input, c_.hooks.output, config);
    if (!io) return std::move(io).error();
    // As late as can be: the last call's teardown goes on meanwhile.
    auto mounts = choose_mounts(s, config, task, say);
    if (!mounts) return std::move(mounts).error();
    if (mounts->hold.how == workspace::MountsHold::alone)
      config.overlays_held = [&hold = mounts->hold] { hold.share(); };
    config.while_entering = [&events] { events.release(); };
    if (c_.is_cancelled()) {
      events.release();
      return cancelled_before_start();
    }
    auto child = begun_ ? spawn(config, std::move(*begun_)) : spawn(config);
    mounts->clones.clear();  // attached (or not) by now
    if (!child) {
      events.release();
      events.add("tool.result", {{"refused", child.error().message()}});
      return std::move(child).error();
    }
    // The next call waits for its teardown; this one need not.
    if (mounts->hold.lock.fd() >= 0) child->hand_teardown_to(mounts->hold.lock.fd());
    io->start();
    std::mutex publish_log;  // the relay's links record from threads of their own
    std::optional<net::Publisher> publisher;
    // A task's runner serves its ports, and those `chock tasks publish` adds later.
    if (!published.empty() || (task && config.network != Network::host)) {
      auto maker = net::SocketMaker::start(child->keeper_pidfd());
      if (maker)
        publisher.emplace(std::move(published), std::move(*maker),
                          [&events, &publish_log](std::string_view event, const nlohmann::json& fields) {
                            std::lock_guard lock(publish_log);
                            events.add(event, fields);
                          });
      else if (!published.empty())
        say("the published ports stay closed: " + maker.error().message());
    }
    if (task) c_.as_task->started(opened_.lock, publisher ? &*publisher : nullptr);
    if (c_.hooks.started) c_.hooks.started();
    if (mounts->hold.how == workspace::MountsHold::alone)
      workspace::remove_set_aside_work(s);  // while the program starts
    Result r = child->wait(c_.cancel_poll.get());
    if (publisher) publisher->stop();  // the host ports refuse from here on
    if (task) child->detach();         // the runner exits next: the keeper's teardown is the kernel's
    io->finish();
    if (task) c_.as_task->drained();
    if (c_.hooks.ended) c_.hooks.ended();
    for (const auto& line :
         end_lines(r, config.argv, out.deadline, [&live](const std::string& l) { return live.said(l); }))
      say(line);
    if (config.judge) {
      events.add("network.summary", config.judge->summary());
      keep_always(s, net_rules, say);
    }
    events.add("tool.result", r.json());
    if (task) c_.as_task->ended(r);
    out.result = std::move(r);
    return out;
  }

 private:
  Call::Impl& c_;
  const CallContext& context_;
  workspace::Opened& opened_;
  std::optional<Begun> begun_;
};

}  // namespace session

session::Call::Impl::Impl(Request r, Hooks h) : request(std::move(r)), hooks(std::move(h)) {
  cancel_event.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  cancel_poll.reset(::epoll_create1(EPOLL_CLOEXEC));
  for (int fd : {cancel_event.get(), request.cancel_fd}) {
    if (fd < 0 || !cancel_poll) continue;
    epoll_event e{};
    e.events = EPOLLIN;
    e.data.fd = fd;
    (void)::epoll_ctl(cancel_poll.get(), EPOLL_CTL_ADD, fd, &e);
  }
}

bool session::Call::Impl::is_cancelled() const {
  if (cancelled.load()) return true;
  pollfd p{cancel_poll.get(), POLLIN, 0};
  return cancel_poll && ::poll(&p, 1, 0) == 1;
}

Expected<session::Outcome> session::Call::Impl::run() {
  if (request.argv.empty()) return Error{"no command to run", "", 0, Errc::bad_config};
  auto context = read_context(request);
  if (!context) return std::move(context).error();
  // The sandbox begins now, while the session is opened: who the call runs
  // as, its network and its limits are known already (a root caller's
  // session runs as the default uid unless it says otherwise; spawn begins
  // anew where the session's Config differs). A task's runner spawns its own.
  std::optional<Begun> begun = std::exchange(prepared, std::nullopt);
  if (!request.background && !as_task && !begun)
    if (auto b = begin(early_config(*context)))
      begun = std::move(*b);  // else spawn begins it and says what failed
  // Asked of Nix before any session is made: a shell that does not evaluate
  // runs nothing. A background call asks the person here, where one may be;
  // its runner evaluates.
  {
    ToolchainGate gate;
    gate.host_only = request.host_toolchain;
    gate.table = &context->layers.table;
    gate.ask = hooks.ask;
    gate.cancel_fd = cancel_poll.get();  // cancel() or the caller's Ctrl-C
    gate.say = [this](const std::string& line) { say(line); };
    gate.evaluate = !request.background;
    auto shell = choose_toolchain(context->root, gate);
    if (!shell) return std::move(shell).error();
    if (*shell && !(*shell)->from_cache) say(printable(toolchain_line(**shell)));
    context->shell = std::move(*shell);
  }
  workspace::OpenOptions open;
  open.project = context->root;
  open.project_is_root = true;
  open.session = request.session;
  open.allow_dirty = request.allow_dirty;
  open.link_base_index = context->layers.operator_file.link_base_index;
  open.last_run = static_cast<std::int64_t>(std::time(nullptr));
  open.shared = true;
  open.deny = request.deny;
  for (const auto& path : context->layers.deny_read())
    if (std::find(open.deny.begin(), open.deny.end(), path) == open.deny.end()) open.deny.push_back(path);
  const auto& named_here = context->layers.project.deny_read;
  for (const auto& path : context->layers.bundle.deny_read)
    if (std::find(request.deny.begin(), request.deny.end(), path) == request.deny.end() &&
        std::find(named_here.begin(), named_here.end(), path) == named_here.end())
      open.deny_may_be_missing.push_back(path);
  open.progress = hooks.progress;
  open.progress_after_ms = hooks.progress_after_ms;
  open.carry = context->layers.project.carry;
  for (const auto& path : request.carry)
    if (std::find(open.carry.begin(), open.carry.end(), path) == open.carry.end()) open.carry.push_back(path);
  open.keep = request.keep || request.background || as_task;
  if (is_cancelled()) return cancelled_before_start();
  auto opened = workspace::open(open);
  if (!opened) return std::move(opened).error();
  Outcome out;
  out.session = opened->session.id;
  out.project = opened->session.project;
  out.created = opened->created;
  if (hooks.opened) hooks.opened(out.session, out.created);
  auto ran = InSession(*this, *context, *opened, std::move(begun)).run(std::move(out));
  const bool one_call = opened->created && !request.keep && !request.background && !as_task;
  if (!one_call) return ran;
  const workspace::Session s = opened->session;
  opened->lock = workspace::SessionLock();  // the removal takes it again
  if (hooks.work_beyond_commits)
    if (const std::string work = hooks.work_beyond_commits(s.id); !work.empty()) {
      say("session " + s.id + " kept: " + work);
      return ran;
    }
  const bool removed = end_one_call(s, [this](const std::string& line) { say(line); });
  if (ran) ran->removed = removed;
  return ran;
}

namespace session {

Call::Call(Request request, Hooks hooks)
    : impl_(std::make_unique<Impl>(std::move(request), std::move(hooks))) {}

Call::~Call() {
  if (!impl_) return;
  if (impl_->thread.joinable()) {
    cancel();
    impl_->thread.join();
  }
}

void Call::use(Begun prepared) {
  impl_->prepared = std::move(prepared);
}

void Call::start() {
  std::lock_guard lock(impl_->mutex);
  if (impl_->thread.joinable() || impl_->outcome) return;
  impl_->thread = std::thread([impl = impl_.get()] {
    auto outcome = impl->run();
    std::lock_guard done(impl->mutex);
    impl->outcome.emplace(std::move(outcome));
  });
}

Expected<Outcome> Call::wait() {
  {
    std::unique_lock lock(impl_->mutex);
    if (!impl_->thread.joinable() && !impl_->outcome) {
      lock.unlock();
      return impl_->run();
    }
  }
  if (impl_->thread.joinable()) impl_->thread.join();
  std::lock_guard lock(impl_->mutex);
  return std::move(*impl_->outcome);
}

void Call::cancel() noexcept {
  impl_->cancelled.store(true);
  const std::uint64_t one = 1;
  if (impl_->cancel_event) (void)!::write(impl_->cancel_event.get(), &one, sizeof one);
}

Expected<Outcome> call(Request request, Hooks hooks) {
  return Call(std::move(request), std::move(hooks)).wait();
}

Expected<Begun> prepare(const Request& request) {
  auto context = read_context(request);
  if (!context) return std::move(context).error();
  return begin(early_config(*context));
}

}  // namespace session

}  // namespace chock
