// The round trip of an MCP tool call, run_command ["true"], through
// `chock mcp`, against `chock sandbox -- /bin/true`, `chock run --session ID
// -- true` and bubblewrap doing the sandbox's job; and read_file of a file
// of the project through `chock mcp` against `chock sandbox -- cat` of the
// same file; taking turns in one run (a change of the machine's load falls
// on all alike):
//   build/bin/mcp_bench [CHOCK_BINARY] [ROUNDS]     (figures in bench/README.md)
// The server is started once and initialized; a round trip is from writing
// the request line to reading its answer's line.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "mcp/jsonrpc.hpp"

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

int spawn_wait(const std::vector<std::string>& args, const char* cwd) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  if (cwd != nullptr) posix_spawn_file_actions_addchdir_np(&fa, cwd);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (spawned != 0) {
    std::fprintf(stderr, "mcp_bench: %s: %s\n", argv[0], std::strerror(spawned));
    return -1;
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) std::fprintf(stderr, "mcp_bench: %s: signal %d\n", argv[0], WTERMSIG(status));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

struct Server {
  pid_t pid = -1;
  int in = -1, out = -1;
};

Server start_server(const std::string& chock, const std::string& project) {
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) std::exit(2);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, to[0], 0);
  posix_spawn_file_actions_adddup2(&fa, from[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args{chock, "mcp", "--project", project};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  Server s;
  if (posix_spawn(&s.pid, argv[0], &fa, nullptr, argv.data(), environ) != 0) std::exit(2);
  close(to[0]);
  close(from[1]);
  s.in = to[1];
  s.out = from[0];
  return s;
}

chock::mcp::Json round_trip(const Server& s, chock::mcp::LineReader& reader,
                            const chock::mcp::Json& message) {
  const std::string line = chock::mcp::serialize(message);
  if (write(s.in, line.data(), line.size()) != static_cast<ssize_t>(line.size())) std::exit(2);
  auto answer = reader.next();
  if (!answer) std::exit(2);
  return chock::mcp::Json::parse(answer->text);
}

struct Series {
  std::string name;
  std::vector<double> ms;
  void print(double against) {
    std::sort(ms.begin(), ms.end());
    const double med = ms[ms.size() / 2];
    std::printf("| %s | %.2f | %.2f-%.2f | %.2f |\n", name.c_str(), med, ms[ms.size() / 10],
                ms[ms.size() * 9 / 10], med / against);
  }
};

}  // namespace

int main(int argc, char** argv) {
  char real[4096];
  if (realpath(argc > 1 ? argv[1] : "build/bin/chock", real) == nullptr) return 2;
  const std::string chock = real;  // the run below starts in the project
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 200;
  char dir[] = "/tmp/chock-mcp-bench.XXXXXX";
  if (mkdtemp(dir) == nullptr) return 2;
  const std::string project = std::string(dir) + "/project";
  const std::string setup = "set -e; mkdir -p '" + project + "' && cd '" + project +
                            "' && git init -q -b main && echo x > a.txt && git add . && "
                            "git -c user.name=b -c user.email=b@b commit -qm init";
  if (spawn_wait({"/bin/sh", "-c", setup}, nullptr) != 0) return 2;
  // The data, state and cache of these sessions stay in the scratch directory.
  for (const char* v : {"XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_CONFIG_HOME"})
    setenv(v, (std::string(dir) + "/" + v).c_str(), 1);

  Server s = start_server(chock, project);
  chock::mcp::LineReader reader(s.out);
  using chock::mcp::Json;
  round_trip(s, reader,
             chock::mcp::request(0, "initialize",
                                 {{"protocolVersion", "2025-11-25"}, {"capabilities", Json::object()}}));
  const Json call =
      chock::mcp::request(1, "tools/call", {{"name", "run_command"}, {"arguments", {{"argv", {"true"}}}}});
  const Json read =
      chock::mcp::request(2, "tools/call", {{"name", "read_file"}, {"arguments", {{"path", "a.txt"}}}});
  // The first call makes the session; later calls continue it, as an agent's do.
  const Json first = round_trip(s, reader, call);
  const std::string session = first["result"]["structuredContent"].value("session", "");
  const std::string bwrap =
      "bwrap --unshare-all --die-with-parent --new-session --ro-bind /usr /usr "
      "--symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 "
      "--ro-bind /etc /etc --proc /proc --dev /dev --tmpfs /tmp /bin/true";
  const bool have_bwrap = spawn_wait({"/bin/sh", "-c", "command -v bwrap"}, nullptr) == 0;
  Series mcp{"run_command [\"true\"] through chock mcp", {}};
  Series sandbox{"chock sandbox -- /bin/true", {}};
  Series run{"chock run --session ID -- true", {}};
  Series bw{"bwrap, the same job as chock sandbox", {}};
  Series read_mcp{"read_file a.txt through chock mcp", {}};
  Series cat{"chock sandbox --ro-file a.txt -- cat a.txt", {}};
  const std::string file = project + "/a.txt";
  for (int r = 0; r < rounds + 10; ++r) {
    for (int k = 0; k < 6; ++k) {
      const int which = (r + k) % 6;
      const auto t = Clock::now();
      if (which == 0) {
        if (const Json a = round_trip(s, reader, call); a["result"].value("isError", true)) {
          std::fprintf(stderr, "mcp_bench: the MCP call failed: %s\n", a.dump().c_str());
          return 3;
        }
      } else if (which == 1) {
        if (spawn_wait({chock, "sandbox", "--", "/bin/true"}, nullptr) != 0) {
          std::fprintf(stderr, "mcp_bench: chock sandbox failed\n");
          return 3;
        }
      } else if (which == 2) {
        if (spawn_wait({chock, "run", "--session", session, "--", "true"}, project.c_str()) != 0) {
          std::fprintf(stderr, "mcp_bench: chock run --session %s failed\n", session.c_str());
          return 3;
        }
      } else if (which == 4) {
        if (const Json a = round_trip(s, reader, read); a["result"].value("isError", true)) {
          std::fprintf(stderr, "mcp_bench: read_file failed: %s\n", a.dump().c_str());
          return 3;
        }
      } else if (which == 5) {
        if (spawn_wait({chock, "sandbox", "--ro-file", file, "--", "cat", file}, nullptr) != 0) {
          std::fprintf(stderr, "mcp_bench: chock sandbox -- cat failed\n");
          return 3;
        }
      } else if (have_bwrap) {
        if (spawn_wait({"/bin/sh", "-c", "exec " + bwrap}, nullptr) != 0) {
          std::fprintf(stderr, "mcp_bench: bwrap failed\n");
          return 3;
        }
      }
      const double ms = ms_since(t);
      if (r < 10) continue;  // warm-up
      Series* into[] = {&mcp, &sandbox, &run, &bw, &read_mcp, &cat};
      into[which]->ms.push_back(ms);
    }
  }
  close(s.in);
  waitpid(s.pid, nullptr, 0);
  std::sort(sandbox.ms.begin(), sandbox.ms.end());
  const double base = sandbox.ms[sandbox.ms.size() / 2];
  std::printf("| what | median, ms | p10-p90, ms | / chock sandbox |\n| --- | --- | --- | --- |\n");
  for (Series* x : {&mcp, &run, &sandbox}) x->print(base);
  if (have_bwrap) bw.print(base);
  std::sort(cat.ms.begin(), cat.ms.end());
  const double cat_base = cat.ms[cat.ms.size() / 2];
  std::printf("\n| what | median, ms | p10-p90, ms | / chock sandbox -- cat |\n| --- | --- | --- | --- |\n");
  read_mcp.print(cat_base);
  cat.print(cat_base);
  spawn_wait({chock, "workspace", "remove", "--force", session}, nullptr);
  spawn_wait({"/bin/rm", "-rf", dir}, nullptr);
  return 0;
}
