// Published ports (`chock run --background --publish`): a server a call
// started is reached from the host's loopback, by nothing else, and only
// while its task runs. Real servers (Python's http.server, a WebSocket echo
// written on Python's standard library) and real clients (curl, Python).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "util/fd.hpp"

namespace chock::test::ws {
namespace {

// A WebSocket echo server on the call's 127.0.0.1:8001 (RFC 6455: the
// handshake, then each text frame sent back unmasked).
constexpr const char* kEchoServer = R"(import base64, hashlib, socket, struct
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8001)); s.listen(4)
def exact(c, n):
    b = b""
    while len(b) < n:
        part = c.recv(n - len(b))
        if not part: raise EOFError
        b += part
    return b
while True:
    c, _ = s.accept()
    head = b""
    while b"\r\n\r\n" not in head: head += c.recv(4096)
    key = [l.split(b":", 1)[1].strip() for l in head.split(b"\r\n") if l.lower().startswith(b"sec-websocket-key")][0]
    accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest())
    c.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    try:
        while True:
            b0, b1 = exact(c, 2)
            n = b1 & 127
            if n == 126: n = struct.unpack("!H", exact(c, 2))[0]
            mask = exact(c, 4)
            data = bytes(x ^ mask[i % 4] for i, x in enumerate(exact(c, n)))
            if b0 & 15 == 8: break
            c.sendall(bytes([0x81, len(data)]) + data if len(data) < 126 else bytes([0x81, 126]) + struct.pack("!H", len(data)) + data)
    except EOFError:
        pass
    c.close()
)";

// Its client, on the host: 1000 messages through the published port, each
// answered with itself.
constexpr const char* kEchoClient = R"(import base64, os, socket, struct, sys
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
key = base64.b64encode(os.urandom(16))
c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key + b"\r\nSec-WebSocket-Version: 13\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head: head += c.recv(4096)
assert head.startswith(b"HTTP/1.1 101"), head
def exact(n):
    b = b""
    while len(b) < n:
        part = c.recv(n - len(b))
        if not part: raise EOFError
        b += part
    return b
for i in range(1000):
    data = ("message %d " % i + "x" * (i % 300)).encode()
    mask = os.urandom(4)
    n = bytes([0x80 | len(data)]) if len(data) < 126 else bytes([0x80 | 126]) + struct.pack("!H", len(data))
    c.sendall(bytes([0x81]) + n + mask + bytes(x ^ mask[j % 4] for j, x in enumerate(data)))
    b0, b1 = exact(2)
    m = b1 & 127
    if m == 126: m = struct.unpack("!H", exact(2))[0]
    got = exact(m)
    assert got == data, (i, got[:40])
c.sendall(bytes([0x88, 0x80]) + os.urandom(4))
print("echoed 1000")
)";

// The URL Chock printed for a published port, and its port.
int published_port(const Output& o) {
  static const std::regex url("published http://127\\.0\\.0\\.1:([0-9]+)/ -> the call's 127\\.0\\.0\\.1:");
  std::smatch m;
  if (!std::regex_search(o.err, m, url)) return 0;
  return std::stoi(m[1].str());
}

std::string task_id(const Output& o) {
  static const std::regex started("task ([a-z0-9]+-[0-9]+) started");
  std::smatch m;
  return std::regex_search(o.err, m, started) ? m[1].str() : std::string();
}

// A socket connected to the host's 127.0.0.1:port (5 s to read), and the
// connect's errno (0 when it connected).
std::pair<UniqueFd, int> connect_loopback(int port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval t{5, 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  const int error = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? 0 : errno;
  return {std::move(fd), error};
}

// What the host's 127.0.0.1:port sends on a connection, until its end (raw
// bytes: the swapping server speaks no HTTP); "" when it refuses or resets.
std::string read_all(int port) {
  auto [fd, error] = connect_loopback(port);
  std::string out;
  char buf[256];
  if (error == 0)
    for (ssize_t n; (n = ::read(fd.get(), buf, sizeof buf)) > 0;)
      out.append(buf, static_cast<std::size_t>(n));
  return out;
}

// A connect to the host's 127.0.0.1:port: 0, or errno.
int connect_error(int port) {
  return connect_loopback(port).second;
}

// What a connect to the host's port meets once it stops connecting, trying
// for at most 1 s (0: it still connected after that).
int connect_error_within_a_second(int port) {
  const auto start = std::chrono::steady_clock::now();
  int error = 0;
  while ((error = connect_error(port)) == 0 &&
         std::chrono::steady_clock::now() - start < std::chrono::seconds(1))
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return error;
}

// Every listening socket of /proc/net/tcp and tcp6 on `port`: its local address (hex).
std::vector<std::string> listeners_on(int port) {
  std::vector<std::string> out;
  char hex[8];
  std::snprintf(hex, sizeof hex, ":%04X", port);
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      fields >> slot >> local >> remote >> state;
      if (state == "0A" && local.ends_with(hex)) out.push_back(local);
    }
  }
  return out;
}

class Publish : public ::testing::Test {
 protected:
  void SetUp() override {
    f.init_git();
    write_file(f.file("index.html"), "a page of the call's own\n");
    write_file(f.file("echo.py"), kEchoServer);
    write_file(f.file("chock.zon"),
               ".{ .policy = .{ .rules = .{\n"
               "    .{ .action = \"net.publish.8000\", .decision = .allow },\n"
               "    .{ .action = \"net.publish.8001\", .decision = .allow },\n"
               "    .{ .action = \"net.publish.8002\", .decision = .deny },\n"
               "} } }\n");
    f.commit_all("a page and an echo server");
  }
  void TearDown() override {
    for (const auto& id : tasks_) (void)f.chock({"tasks", "cancel", id});
  }
  // A background task publishing `spec`; its host port (0 when it failed).
  int start(const std::string& spec, const std::string& script, Output* o = nullptr,
            const std::string& net = "none") {
    Output started =
        f.chock({"run", "--background", "--net", net, "--publish", spec, "--", "sh", "-c", script});
    if (o != nullptr) *o = started;
    EXPECT_EQ(started.status, 0) << describe(started);
    const std::string id = task_id(started);
    if (!id.empty()) tasks_.push_back(id);
    return published_port(started);
  }
  // A background task publishing nothing (yet); its id.
  std::string start_plain(const std::string& script, const std::string& net = "none") {
    Output started = f.chock({"run", "--background", "--net", net, "--", "sh", "-c", script});
    EXPECT_EQ(started.status, 0) << describe(started);
    const std::string id = task_id(started);
    if (!id.empty()) tasks_.push_back(id);
    return id;
  }
  // The page at the host port, fetched by curl, retried while the server starts (bounded).
  Output get(int port, const std::string& path = "/index.html") {
    Output o;
    for (int i = 0; i < 100; ++i) {
      o = run_process({"curl", "-sS", "-m", "5", "http://127.0.0.1:" + std::to_string(port) + path});
      if (o.status == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return o;
  }
  Fixture f;
  std::vector<std::string> tasks_;
};

TEST_F(Publish, AServerOfACallIsReachedFromTheHostAndOnlyWhileItsTaskRuns) {
  const int port = start("8000", "exec python3 -m http.server 8000 --bind 127.0.0.1");
  ASSERT_GT(port, 0);
  Output page = get(port);
  ASSERT_EQ(page.status, 0) << describe(page);
  EXPECT_EQ(page.out, "a page of the call's own\n");
  // Listening on the host's loopback and nowhere else.
  const auto listening = listeners_on(port);
  ASSERT_FALSE(listening.empty());
  for (const auto& local : listening)
    EXPECT_TRUE(local.starts_with("0100007F:") || local.starts_with("00000000000000000000000001000000:"))
        << "a listener on " << local;
  Output list = f.chock({"tasks", "list", "--json"});
  bool listed = false;
  for (const auto& t : nlohmann::json::parse(list.out))
    if (t["id"] == tasks_.at(0) && t["published"].size() == 1)
      listed = t["published"][0]["url"] == "http://127.0.0.1:" + std::to_string(port) + "/" &&
               t["published"][0]["call_port"] == 8000;
  EXPECT_TRUE(listed) << describe(list);
  // The session log has the connection: from, to, bytes, duration.
  const std::string& id = tasks_.at(0);
  bool logged = false;
  for (int i = 0; i < 50 && !logged; ++i) {
    logged = has_event(log_lines(f, id.substr(0, id.rfind('-'))), "publish.connection", "\"bytes_out\":");
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(logged) << read_file(log_path(f, id.substr(0, id.rfind('-'))));
  // Cancelled, the port refuses at once (within 1 s).
  Output cancel = f.chock({"tasks", "cancel", tasks_.at(0)});
  ASSERT_EQ(cancel.status, 0) << describe(cancel);
  EXPECT_EQ(connect_error_within_a_second(port), ECONNREFUSED);
  EXPECT_TRUE(listeners_on(port).empty());
}

// A filtered call's servers are published the same way: the relay is not
// the filtered network's, and its ruleset leaves the call's loopback alone.
TEST_F(Publish, AFilteredCallsServerIsReachedToo) {
  const int port = start("8000", "exec python3 -m http.server 8000 --bind 127.0.0.1", nullptr, "filtered");
  ASSERT_GT(port, 0);
  Output page = get(port);
  ASSERT_EQ(page.status, 0) << describe(page);
  EXPECT_EQ(page.out, "a page of the call's own\n");
}

TEST_F(Publish, AWebSocketRoundTripsAThousandMessages) {
  const int port = start("8001", "exec python3 echo.py");
  ASSERT_GT(port, 0);
  TempDir dir;
  write_file(dir.path() + "/client.py", kEchoClient);
  Output o;
  for (int i = 0; i < 50; ++i) {  // the server starts as the task does
    o = run_process({"python3", dir.path() + "/client.py", std::to_string(port)});
    if (o.status == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(o.status, 0) << describe(o);
  EXPECT_EQ(o.out, "echoed 1000\n");
}

// The relay dials the call's 127.0.0.1:CALL_PORT and nothing else: a call
// that closes its listener and opens another gets the connection refused,
// never sent to the other one.
TEST_F(Publish, ACallThatSwapsItsListenerGetsConnectionsRefusedNeverRedirected) {
  const int port = start("8000",
                         "python3 -c 'import socket\n"
                         "s = socket.socket(); s.bind((\"127.0.0.1\", 8000)); s.listen(1)\n"
                         "c, _ = s.accept(); c.sendall(b\"first\"); c.close(); s.close()\n"
                         "t = socket.socket(); t.bind((\"127.0.0.1\", 8003)); t.listen(1)\n"
                         "while True:\n"
                         "    c, _ = t.accept(); c.sendall(b\"other\"); c.close()\n'");
  ASSERT_GT(port, 0);
  std::string first;
  for (int i = 0; i < 100 && first.empty(); ++i) {  // the server starts as the task does
    first = read_all(port);
    if (first.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(first, "first");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(read_all(port), "");
  // Still listening on the host (the task runs): refused by the relay, not the host.
  EXPECT_FALSE(listeners_on(port).empty());
}

TEST_F(Publish, TheHostPortChosenIsPrintedAndAPortTakenIsRefusedWithOneLine) {
  const int port = start("8000", "exec python3 -m http.server 8000 --bind 127.0.0.1");
  ASSERT_GT(port, 0);
  Output taken = f.chock({"run", "--background", "--publish", std::to_string(port) + ":8001", "--", "true"});
  EXPECT_NE(taken.status, 0) << describe(taken);
  EXPECT_NE(taken.err.find("chock: publish the call's port 8001: listen on: 127.0.0.1:" +
                           std::to_string(port) + ": EADDRINUSE"),
            std::string::npos)
      << describe(taken);
}

TEST_F(Publish, APolicyRowThatDeniesOrAsksWithNobodyToAnswerRefuses) {
  Output denied = f.chock({"run", "--background", "--publish", "8002", "--", "true"});
  EXPECT_NE(denied.status, 0) << describe(denied);
  EXPECT_NE(denied.err.find("publishing the call's port 8002 is denied by net.publish.8002"),
            std::string::npos)
      << describe(denied);
  Output asks = f.chock({"run", "--background", "--publish", "8004", "--", "true"});
  EXPECT_NE(asks.status, 0) << describe(asks);
  EXPECT_NE(asks.err.find("net.publish.8004"), std::string::npos) << describe(asks);
  EXPECT_EQ(asks.err.find("task "), std::string::npos) << "a task started: " << describe(asks);
  Output host = f.chock({"run", "--net", "host", "--publish", "8000", "--", "true"});
  EXPECT_NE(host.status, 0) << describe(host);
  EXPECT_NE(host.err.find("--publish needs the call's own network"), std::string::npos) << describe(host);
  Output bad = f.chock({"run", "--publish", "80:x", "--", "true"});
  EXPECT_NE(bad.status, 0) << describe(bad);
  EXPECT_NE(bad.err.find("--publish 80:x: `x` is not a port"), std::string::npos) << describe(bad);
}

// `chock tasks publish`: a task that is running already gets its port
// published, served as one published at the start, and closed with the task.
TEST_F(Publish, ARunningTaskIsPublishedLaterAndItsPortClosesWithIt) {
  const std::string id = start_plain("exec python3 -m http.server 8000 --bind 127.0.0.1");
  ASSERT_FALSE(id.empty());
  Output published = f.chock({"tasks", "publish", id, "8000"});
  ASSERT_EQ(published.status, 0) << describe(published);
  static const std::regex url("^http://127\\.0\\.0\\.1:([0-9]+)/\n$");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(published.out, m, url)) << describe(published);
  const int port = std::stoi(m[1].str());
  Output page = get(port);
  ASSERT_EQ(page.status, 0) << describe(page);
  EXPECT_EQ(page.out, "a page of the call's own\n");
  for (const auto& local : listeners_on(port))
    EXPECT_TRUE(local.starts_with("0100007F:") || local.starts_with("00000000000000000000000001000000:"))
        << "a listener on " << local;
  Output list = f.chock({"tasks", "list", "--json"});
  bool listed = false;
  for (const auto& t : nlohmann::json::parse(list.out))
    if (t["id"] == id && t["published"].size() == 1)
      listed = t["published"][0]["url"] == "http://127.0.0.1:" + std::to_string(port) + "/";
  EXPECT_TRUE(listed) << describe(list);
  // The runner's door is beside the task's lock, where no call can reach it;
  // the task's record, its neighbour, is what calls read.
  const std::string session = id.substr(0, id.rfind('-'));
  EXPECT_EQ(::access((f.sessions() + "/" + session + "/task-01.door").c_str(), F_OK), 0);
  Output inside = f.chock(
      {"run", "--session", session, "--", "sh", "-c",
       "ls /run/chock/tasks && { find / -path /proc -prune -o -name '*.door' -print 2>/dev/null; true; }"});
  EXPECT_EQ(inside.status, 0) << describe(inside);
  EXPECT_NE(inside.out.find("task-01.json"), std::string::npos) << describe(inside);
  EXPECT_EQ(inside.out.find(".door"), std::string::npos) << describe(inside);
  Output cancel = f.chock({"tasks", "cancel", id});
  ASSERT_EQ(cancel.status, 0) << describe(cancel);
  EXPECT_EQ(connect_error_within_a_second(port), ECONNREFUSED);
  EXPECT_NE(::access((f.sessions() + "/" + session + "/task-01.door").c_str(), F_OK), 0) << "the door stays";
  Output after = f.chock({"tasks", "publish", id, "8000"});
  EXPECT_NE(after.status, 0) << describe(after);
  EXPECT_NE(after.err.find("chock: tasks: task " + id + " is not running (cancelled)"), std::string::npos)
      << describe(after);
}

TEST_F(Publish, PublishingARunningTaskIsDecidedAsAPortPublishedAtItsStart) {
  const std::string id = start_plain("exec sleep 60");
  ASSERT_FALSE(id.empty());
  Output denied = f.chock({"tasks", "publish", id, "8002"});
  EXPECT_NE(denied.status, 0) << describe(denied);
  EXPECT_NE(denied.err.find("publishing the call's port 8002 is denied by net.publish.8002"),
            std::string::npos)
      << describe(denied);
  Output asks = f.chock({"tasks", "publish", id, "8004"});
  EXPECT_NE(asks.status, 0) << describe(asks);
  EXPECT_NE(asks.err.find("net.publish.8004 asks, and nobody is here to answer"), std::string::npos)
      << describe(asks);
  // The person's own row decides it for this command.
  Output allowed = f.chock({"tasks", "publish", id, "8004", "--policy-rule", "net.publish.8004=allow"});
  EXPECT_EQ(allowed.status, 0) << describe(allowed);
  static const std::regex url("http://127\\.0\\.0\\.1:([0-9]+)/");
  std::smatch m;
  const int port = std::regex_search(allowed.out, m, url) ? std::stoi(m[1].str()) : 0;
  ASSERT_GT(port, 0) << describe(allowed);
  Output taken = f.chock({"tasks", "publish", id, std::to_string(port) + ":8000"});
  EXPECT_NE(taken.status, 0) << describe(taken);
  EXPECT_NE(taken.err.find("127.0.0.1:" + std::to_string(port) + ": EADDRINUSE"), std::string::npos)
      << describe(taken);
  const std::string on_host = start_plain("exec sleep 60", "host");
  ASSERT_FALSE(on_host.empty());
  Output host = f.chock({"tasks", "publish", on_host, "8000"});
  EXPECT_NE(host.status, 0) << describe(host);
  EXPECT_NE(host.err.find("needs the call's own network"), std::string::npos) << describe(host);
  Output bad = f.chock({"tasks", "publish", id, "x"});
  EXPECT_NE(bad.status, 0) << describe(bad);
  EXPECT_NE(bad.err.find("`x` is not a port"), std::string::npos) << describe(bad);
}

}  // namespace
}  // namespace chock::test::ws
