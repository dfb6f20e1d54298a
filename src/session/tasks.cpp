#include "session/tasks.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>
#include <thread>

#include "session/call_impl.hpp"
#include "session/net_rules.hpp"
#include "session/published.hpp"
#include "session/task_control.hpp"
#include "util/dirs.hpp"
#include "util/escape.hpp"
#include "util/fd.hpp"
#include "util/fs.hpp"
#include "util/io.hpp"
#include "util/json.hpp"
#include "util/syscalls.hpp"

extern char** environ;

namespace chock::session {

namespace {

std::string two_digits(int n) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%02d", n);
  return buf;
}

std::string now_text() {
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return when;
}

std::string lock_path(const workspace::Session& s, int n) {
  return s.dir + "/task-" + two_digits(n) + ".lock";
}

// The next task number of the session, or an Error past kMaxTasks.
Expected<int> next_task(const std::string& dir) {
  int highest = 0;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      int n = 0;
      if (std::sscanf(e->d_name, "task-%d.json", &n) == 1 && n > highest) highest = n;
    }
    ::closedir(d);
  }
  if (highest >= kMaxTasks)
    return Error{
        "the session has " + std::to_string(kMaxTasks) + " tasks, the most it keeps: start a new session", "",
        0, Errc::bad_config};
  return highest + 1;
}

// When process `pid` started (clock ticks after boot, /proc/PID/stat's
// 22nd field): with the pid, who it is; 0 when it cannot be read.
std::uint64_t start_time_of(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // The command (field 2) is in parentheses and may hold anything: count after its last ')'.
  const auto close = text.rfind(')');
  if (close == std::string::npos) return 0;
  std::size_t at = close + 2;
  for (int field = 3; field < 22; ++field) {
    at = text.find(' ', at);
    if (at == std::string::npos) return 0;
    ++at;
  }
  return std::strtoull(text.c_str() + at, nullptr, 10);
}

nlohmann::json request_json(const Request& r) {
  nlohmann::json j = {{"project", r.project},
                      {"session", r.session},
                      {"argv", r.argv},
                      {"env", r.env},
                      {"deny", r.deny},
                      {"carry", r.carry},
                      {"host_toolchain", r.host_toolchain},
                      {"plain_env", r.plain_env},
                      {"org_bundle", r.org_bundle},
                      {"policy_rules", r.policy_rules},
                      {"publish", r.publish}};
  j["network"] = !r.network                        ? nlohmann::json(nullptr)
                 : *r.network == Network::filtered ? nlohmann::json("filtered")
                 : *r.network == Network::host     ? nlohmann::json("host")
                                                   : nlohmann::json("none");
  j["timeout_ms"] = r.timeout ? nlohmann::json(r.timeout->count()) : nlohmann::json(nullptr);
  return j;
}

Expected<Request> request_of(const std::string& text) {
  const auto parsed = parse_json(text);
  const nlohmann::json j = parsed ? *parsed : nlohmann::json();
  if (!j.is_object()) return Error{"the task's request is not a JSON object", "", 0, Errc::bad_config};
  Request r;
  try {
    r.project = j.at("project").get<std::string>();
    r.session = j.at("session").get<std::string>();
    r.argv = j.at("argv").get<std::vector<std::string>>();
    r.env = j.at("env").get<std::vector<std::string>>();
    r.deny = j.at("deny").get<std::vector<std::string>>();
    r.carry = j.at("carry").get<std::vector<std::string>>();
    r.host_toolchain = j.at("host_toolchain").get<bool>();
    r.plain_env = j.at("plain_env").get<bool>();
    r.org_bundle = j.at("org_bundle").get<std::string>();
    r.policy_rules = j.at("policy_rules").get<std::vector<std::string>>();
    r.publish = j.value("publish", std::vector<std::string>{});
    const auto& net = j.at("network");
    if (net == "filtered") r.network = Network::filtered;
    if (net == "host") r.network = Network::host;
    if (net == "none") r.network = Network::none;
    if (j.at("timeout_ms").is_number_integer())
      r.timeout = std::chrono::milliseconds(j.at("timeout_ms").get<long long>());
  } catch (const nlohmann::json::exception& e) {
    return Error{std::string("the task's request: ") + e.what(), "", 0, Errc::bad_config};
  }
  return r;
}

// The listeners start_task handed over, as its record lists the ports.
std::vector<net::Published> inherited_ports(const nlohmann::json& state) {
  std::vector<net::Published> out;
  int fd = 4;
  for (const auto& p : state.value("published", nlohmann::json::array())) {
    net::Published port;
    port.host_port = p.value("host_port", std::uint16_t{0});
    port.call_port = p.value("call_port", std::uint16_t{0});
    port.v4.reset(fd++);
    UniqueFd v6(fd++);
    int type = 0;
    socklen_t len = sizeof type;
    if (::getsockopt(v6.get(), SOL_SOCKET, SO_TYPE, &type, &len) == 0) port.v6 = std::move(v6);
    ::fcntl(port.v4.get(), F_SETFD, FD_CLOEXEC);
    if (port.v6) ::fcntl(port.v6.get(), F_SETFD, FD_CLOEXEC);
    out.push_back(std::move(port));
  }
  return out;
}

void write_state(const std::string& base, const nlohmann::json& state) {
  (void)fs::write_file_atomic(base + ".json", state.dump() + "\n");
}

// Copies the call's output into the task's file up to the cap; past it, the
// rest is read and counted, never kept.
std::uint64_t keep_output(int from, int file) {
  std::uint64_t kept = 0, dropped = 0;
  char buf[65536];
  for (ssize_t n; (n = ::read(from, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto got = static_cast<std::uint64_t>(n);
    const std::uint64_t room = kMaxTaskOutput > kept ? kMaxTaskOutput - kept : 0;
    const std::uint64_t take = std::min(room, got);
    if (take > 0 && write_all(file, std::string_view(buf, take), "task output")) kept += take;
    dropped += got - take;
  }
  return dropped;
}

// The runner's part of the call (AsTask): its output into the task's file,
// its state into the record.
class Runner {
 public:
  Runner(std::string base, std::string lock, nlohmann::json state)
      : base_(std::move(base)), lock_(std::move(lock)), state_(std::move(state)) {}

  Expected<void> open() {
    out_.reset(::open((base_ + ".out").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
    null_.reset(::open("/dev/null", O_RDWR | O_CLOEXEC));
    int p[2];
    if (!out_ || !null_ || ::pipe2(p, O_CLOEXEC) != 0)
      return sys_error("open the task's output", base_ + ".out");
    read_.reset(p[0]);
    write_.reset(p[1]);
    state_["pid"] = ::getpid();
    state_["pid_start"] = start_time_of(::getpid());
    state_["state"] = "running";
    write_state(base_, state_);
    return {};
  }

  void say(const std::string& line) { (void)write_all(out_.get(), "chock: " + line + "\n", "task output"); }

  AsTask as_task() {
    AsTask t;
    t.prepare = [this](Config& config) -> Expected<void> {
      config.stdio = {null_.get(), write_.get(), write_.get()};
      config.pass_stdin = false;
      return {};
    };
    t.started = [this](workspace::SessionLock& lock, net::Publisher* publisher) {
      write_.reset();
      if (publisher) open_door(*publisher);
      // Started: later calls of the session, and what takes it alone, go on meanwhile.
      lock = workspace::SessionLock();
      copying_ = std::thread([this] { dropped_ = keep_output(read_.get(), out_.get()); });
    };
    t.drained = [this] {
      // Closed before the ports are: nothing is published to an ended task.
      if (door_) door_->stop();
      if (copying_.joinable()) copying_.join();
      if (dropped_ > 0)
        (void)write_all(out_.get(),
                        "\nchock: the task's output passed its cap of 8 MiB; " + std::to_string(dropped_) +
                            " bytes more were dropped\n",
                        "task output");
    };
    t.ended = [this](const Result& r) {
      state_["state"] = r.cancelled ? "cancelled" : "exited";
      state_["exit_status"] = r.exit_status();
      state_["ended"] = now_text();
      state_["dropped_bytes"] = dropped_;
      write_state(base_, state_);
    };
    return t;
  }

  // `chock tasks publish`: the ports it hands over are served, and listed in the record.
  void open_door(net::Publisher& publisher) {
    auto door =
        TaskControl::open(control_path(lock_), [this, &publisher](net::Published port) -> Expected<void> {
          const nlohmann::json listed = published_entry(port);
          const std::string line = "published " + port.url() +
                                   " -> the call's 127.0.0.1:" + std::to_string(port.call_port) +
                                   " (chock tasks publish)";
          if (auto added = publisher.add(std::move(port)); !added) return added;
          if (!state_.contains("published") || !state_["published"].is_array())
            state_["published"] = nlohmann::json::array();
          state_["published"].push_back(listed);
          write_state(base_, state_);
          say(line);
          return {};
        });
    if (door)
      door_ = std::move(*door);
    else
      say("`chock tasks publish` cannot reach this task: " + door.error().message());
  }

  void failed(const Error& e) {
    write_.reset();
    if (copying_.joinable()) copying_.join();
    say("the task could not start: " + e.message());
    state_["state"] = "failed";
    state_["error"] = e.message();
    write_state(base_, state_);
  }

 private:
  std::string base_;
  std::string lock_;
  nlohmann::json state_;
  std::unique_ptr<TaskControl> door_;
  UniqueFd out_, null_, read_, write_;
  std::thread copying_;
  std::uint64_t dropped_ = 0;
};

}  // namespace

Expected<std::string> start_task(const workspace::Session& s, const Request& request,
                                 const std::vector<net::Published>& published) {
  auto helper = companion("chock-helper");
  if (!helper) return std::move(helper).error();
  const std::string dir = workspace::tasks_dir(s);
  if (auto made = fs::make_dirs(dir, 0755); !made) return std::move(made).error();
  auto n = next_task(dir);
  if (!n) return std::move(n).error();
  const std::string base = dir + "/task-" + two_digits(*n);
  const std::string id = s.id + "-" + two_digits(*n);
  // Taken before the runner starts, and handed to it: the task is never
  // seen as ended before it ran.
  UniqueFd task_lock(::open(lock_path(s, *n).c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!task_lock || ::flock(task_lock.get(), LOCK_EX) != 0)
    return sys_error("lock the task", lock_path(s, *n));
  nlohmann::json state = {{"id", id}, {"argv", request.argv}, {"started", now_text()}, {"state", "starting"}};
  if (request.network) state["network"] = network_name(*request.network);
  if (!published.empty()) state["published"] = published_json(published);
  if (auto w = fs::write_file_atomic(base + ".json", state.dump() + "\n"); !w) return std::move(w).error();
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("pipe, for the task's runner");
  UniqueFd in_read(p[0]), in_write(p[1]);
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_adddup2(&files, in_read.get(), 0);
  posix_spawn_file_actions_addopen(&files, 1, "/dev/null", O_RDWR, 0);
  posix_spawn_file_actions_addopen(&files, 2, "/dev/null", O_RDWR, 0);
  posix_spawn_file_actions_adddup2(&files, task_lock.get(), 3);
  // Each port's IPv4 listener, then its IPv6 one (or /dev/null, where the
  // host has no IPv6 loopback), from descriptor 4 on.
  int next_fd = 4;
  for (const auto& p : published) {
    posix_spawn_file_actions_adddup2(&files, p.v4.get(), next_fd++);
    if (p.v6)
      posix_spawn_file_actions_adddup2(&files, p.v6.get(), next_fd++);
    else
      posix_spawn_file_actions_addopen(&files, next_fd++, "/dev/null", O_RDONLY, 0);
  }
  // A session of its own: the caller's terminal, its hangup and its Ctrl-C never reach the task.
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  std::string arg0 = "chock-helper", mode = "task", number = std::to_string(*n), session = s.id;
  char* argv[] = {arg0.data(), mode.data(), session.data(), number.data(), nullptr};
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, helper->c_str(), &files, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    errno = rc;
    return sys_error("start the task's runner", *helper);
  }
  in_read.reset();
  // Not waited for: it runs on after this call, in a session of its own.
  if (auto w = write_all(in_write.get(), request_json(request).dump(), "the task's request"); !w)
    return std::move(w).error();
  return id;  // our copy of the lock closes here; the runner's holds it
}

int run_task(const std::string& session, int number) {
  auto s = workspace::load(session);
  if (!s) return 125;
  const std::string base = workspace::tasks_dir(*s) + "/task-" + two_digits(number);
  auto recorded = fs::read_file_nofollow(base + ".json", 1 << 20);
  if (!recorded) return 125;
  auto parsed = parse_json(*recorded);
  if (!parsed || !parsed->is_object()) return 125;
  nlohmann::json state = std::move(*parsed);
  std::vector<net::Published> published = inherited_ports(state);
  Runner runner(base, lock_path(*s, number), std::move(state));
  if (!runner.open()) return 125;
  std::string text;
  char buf[65536];
  for (ssize_t n; (n = ::read(0, buf, sizeof buf)) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || text.size() > (8U << 20)) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  auto request = request_of(text);
  if (!request) {
    runner.failed(request.error());
    return 125;
  }
  // `chock tasks cancel` sends SIGTERM: the call's whole tree ends.
  sigset_t cancel_signals;
  sigemptyset(&cancel_signals);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&cancel_signals, sig);
  ::sigprocmask(SIG_BLOCK, &cancel_signals, nullptr);
  const UniqueFd cancel(::signalfd(-1, &cancel_signals, SFD_CLOEXEC | SFD_NONBLOCK));
  request->cancel_fd = cancel.get();
  Hooks hooks;
  hooks.say = [&runner](const std::string& line) { runner.say(line); };
  Call call(std::move(*request), std::move(hooks));
  call.impl().as_task = runner.as_task();
  call.impl().published = std::move(published);
  auto outcome = call.wait();
  if (!outcome) {
    runner.failed(outcome.error());
    return 125;
  }
  return 0;
}

Expected<Task> find_task(const std::string& id) {
  const auto dash = id.rfind('-');
  if (dash == std::string::npos || dash + 3 != id.size())
    return Error{"a task id looks like SESSION-NN, as chock run --background printed it", id, 0,
                 Errc::bad_config};
  auto s = workspace::load(id.substr(0, dash));
  if (!s) return std::move(s).error();
  const std::string nn = id.substr(dash + 1);
  if (nn.find_first_not_of("0123456789") != std::string::npos)
    return Error{"a task id looks like SESSION-NN, as chock run --background printed it", id, 0,
                 Errc::bad_config};
  const std::string base = workspace::tasks_dir(*s) + "/task-" + nn;
  auto text = fs::read_file_nofollow(base + ".json", 1 << 20);
  if (!text) return Error{"there is no task " + id, "", 0, Errc::bad_config};
  auto state = parse_json(*text);
  if (!state || !state->is_object()) return Error{"the task's record is damaged", base + ".json"};
  return Task{id, base, s->dir + "/task-" + nn + ".lock", std::move(*state)};
}

bool task_running(const Task& t) {
  UniqueFd lock(::open(t.lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!lock) return t.state.value("state", "") == "starting";
  return ::flock(lock.get(), LOCK_SH | LOCK_NB) != 0;
}

Expected<std::string> task_output(const Task& t) {
  return fs::read_file_nofollow(t.base + ".out", kMaxTaskOutput + 4096);
}

std::string task_line(const nlohmann::json& s) {
  std::string argv;
  for (const auto& a : s.value("argv", nlohmann::json::array()))
    if (a.is_string()) argv += (argv.empty() ? "" : " ") + a.get<std::string>();
  std::string status = s.value("state", "");
  if (s.contains("exit_status") && s["exit_status"].is_number_integer())
    status += " (" + std::to_string(s["exit_status"].get<int>()) + ")";
  std::string ports;
  if (s.value("state", "") == "running")
    for (const auto& p : s.value("published", nlohmann::json::array()))
      if (p.is_object())
        ports += "  " + p.value("url", std::string()) + " -> " + std::to_string(p.value("call_port", 0));
  return printable(s.value("id", "") + "  " + status + "  " + s.value("started", "") + "  " + argv + ports);
}

Expected<bool> cancel_task(const Task& t, std::string* why) {
  if (!task_running(t)) {
    *why = "it is not running (" + t.state.value("state", std::string()) + ")";
    return false;
  }
  // Pinned: the runner's pidfd is opened first, then the process it names
  // must have started when the record says and its lock must still be
  // held, so the pidfd is the runner's and not a process that took its
  // number after it ended. Its SIGTERM ends the call's whole tree.
  const pid_t pid = t.state.value("pid", 0);
  const std::uint64_t started = t.state.value("pid_start", std::uint64_t{0});
  UniqueFd runner(pid > 0 ? sys::pidfd_open(pid, 0) : -1);
  if (!runner || started == 0 || start_time_of(pid) != started || !task_running(t)) {
    *why = "it is not running (it has just ended)";
    return false;
  }
  if (sys::pidfd_send_signal(runner.get(), SIGTERM) != 0) return sys_error("signal the task's runner", t.id);
  for (int i = 0; i < 500 && task_running(t); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return true;
}

Expected<net::PortSpec> publish_to_task(const Task& t, const std::string& spec, config::LayerOptions options,
                                        const Hooks::Ask& ask) {
  if (!task_running(t))
    return Error{"task " + t.id + " is not running (" + t.state.value("state", std::string()) + ")", "", 0,
                 Errc::bad_config};
  const std::string net = t.state.value("network", std::string());
  const Network network = net == "filtered" ? Network::filtered
                          : net == "none"   ? Network::none
                                            : Network::host;
  auto s = workspace::load(t.id.substr(0, t.id.rfind('-')));
  if (!s) return std::move(s).error();
  options.project_dir = s->project;
  auto layers = config::load_layers(options);
  if (!layers) return std::move(layers).error();
  auto opened = open_published({spec}, network, layers->table, ask);
  if (!opened) return std::move(opened).error();
  const net::Published& port = opened->front();
  // The runner opens its door once the call's program runs: a task that has
  // only just started is waited for (bounded), an ended one is not.
  for (int i = 0;; ++i) {
    auto handed = hand_to_runner(control_path(t.lock), port);
    if (handed) break;
    const int code = handed.error().code;
    if ((code != ENOENT && code != ECONNREFUSED) || i >= 100 || !task_running(t))
      return std::move(handed).error();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return net::PortSpec{port.host_port, port.call_port};  // our listeners close here; the runner's serve
}

}  // namespace chock::session
