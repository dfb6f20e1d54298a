#include "mcp/http_transport.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>

#include "mcp/http_server.hpp"
#include "mcp/http_session.hpp"
#include "util/escape.hpp"
#include "util/hex.hpp"
#include "util/json.hpp"

namespace chock::mcp {

namespace {

constexpr std::size_t kMaxSessions = 16;
constexpr const char* kEndpoint = "/mcp";

int stop_write = -1;  // the self-pipe a signal writes to

void on_stop_signal(int) {
  const char byte = 1;
  (void)!::write(stop_write, &byte, 1);
}

std::string random_hex(std::size_t bytes) {
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    const ssize_t n = ::getrandom(raw.data() + got, bytes - got, 0);
    if (n <= 0) continue;  // EINTR; getrandom does not fail once the pool is ready
    got += static_cast<std::size_t>(n);
  }
  return hex_of(raw);
}

// Compares without telling by its time how much of the token matched.
bool same_token(const std::string& given, const std::string& token) {
  unsigned char differ = given.size() == token.size() ? 0 : 1;
  for (std::size_t i = 0; i < token.size(); ++i)
    differ |= static_cast<unsigned char>(token[i] ^ (i < given.size() ? given[i] : 0));
  return differ == 0;
}

bool contains(const std::optional<std::string>& header, const std::string& part) {
  return header && http::lower(*header).find(part) != std::string::npos;
}

// An error answer whose body is a JSON-RPC error (id null), as the SDKs send.
void refuse(http::Reply& reply, int status, const std::string& why, http::Headers headers = {}) {
  headers.emplace_back("Content-Type", "application/json");
  (void)reply.send(status, headers, error_response(nullptr, code::invalid_request, why).dump());
}

class Transport {
 public:
  Transport(const HttpOptions& o, std::string token) : o_(o), token_(std::move(token)) {}
  void handle(const http::Request& r, http::Reply& reply);
  void end_all() {
    std::map<std::string, std::shared_ptr<HttpSession>> all;
    {
      std::lock_guard g(mutex_);
      all.swap(sessions_);
    }
    for (auto& [id, s] : all) s->end();
  }

 private:
  std::shared_ptr<HttpSession> find(const http::Request& r, http::Reply& reply);
  // Ends the session unused the longest of those serving nothing (clients
  // often leave without DELETE): it, to be let go of outside mutex_ (its
  // server's thread is joined then), or null when every one is serving.
  // Under mutex_.
  std::shared_ptr<HttpSession> evict_idle();
  void post(const http::Request& r, http::Reply& reply);

  const HttpOptions& o_;
  std::string token_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<HttpSession>> sessions_;
};

void Transport::handle(const http::Request& r, http::Reply& reply) {
  const std::string path = r.target.substr(0, r.target.find('?'));
  if (path != kEndpoint) return refuse(reply, 404, "the MCP endpoint is /mcp");
  // Before the token: a page that rebound a name to 127.0.0.1 is told nothing more.
  if (!loopback_host(r.header("host").value_or("")))
    return refuse(reply, 403, "the Host header must name the loopback (127.0.0.1, localhost or [::1])");
  if (const auto origin = r.header("origin"); origin && !loopback_origin(*origin))
    return refuse(reply, 403, "requests from the origin " + printable(*origin) + " are refused");
  const std::string auth = r.header("authorization").value_or("");
  if (http::lower(auth.substr(0, 7)) != "bearer " || !same_token(auth.substr(7), token_))
    return refuse(reply, 401,
                  "a bearer token is required (Authorization: Bearer TOKEN, as chock mcp --http printed)",
                  {{"WWW-Authenticate", "Bearer realm=\"chock\""}});
  if (const auto version = r.header("mcp-protocol-version"); version) {
    bool known = false;
    for (const char* v : kProtocolVersions) known = known || *version == v;
    if (!known) return refuse(reply, 400, "unsupported MCP-Protocol-Version: " + printable(*version));
  }
  if (r.method == "POST") return post(r, reply);
  if (r.method == "GET") {
    if (!contains(r.header("accept"), "text/event-stream"))
      return refuse(reply, 406, "a GET must accept text/event-stream");
    auto s = find(r, reply);
    if (s && !s->listen({}, reply)) refuse(reply, 409, "this session has an event stream open already");
    return;
  }
  if (r.method == "DELETE") {
    auto s = find(r, reply);
    if (!s) return;
    {
      std::lock_guard g(mutex_);
      sessions_.erase(s->id());
    }
    s->end();
    (void)reply.send(200, {}, "");
    return;
  }
  refuse(reply, 405, "the MCP endpoint takes POST, GET and DELETE", {{"Allow", "POST, GET, DELETE"}});
}

std::shared_ptr<HttpSession> Transport::evict_idle() {
  std::shared_ptr<HttpSession> oldest;
  std::chrono::steady_clock::time_point since{};
  for (const auto& [id, s] : sessions_) {
    const auto idle = s->idle_since();
    if (idle && (!oldest || *idle < since)) {
      oldest = s;
      since = *idle;
    }
  }
  if (!oldest) return nullptr;
  sessions_.erase(oldest->id());
  oldest->end();
  std::fprintf(stderr, "chock: mcp: session %s ended to make room for a new one (the longest unused)\n",
               oldest->id().c_str());
  return oldest;
}

std::shared_ptr<HttpSession> Transport::find(const http::Request& r, http::Reply& reply) {
  const auto id = r.header("mcp-session-id");
  if (!id) {
    refuse(reply, 400, "Mcp-Session-Id is required after initialize");
    return nullptr;
  }
  std::lock_guard g(mutex_);
  const auto it = sessions_.find(*id);
  if (it == sessions_.end()) {
    refuse(reply, 404, "no session " + printable(*id) + " (it ended, or never was): initialize again");
    return nullptr;
  }
  return it->second;
}

void Transport::post(const http::Request& r, http::Reply& reply) {
  if (!contains(r.header("content-type"), "application/json"))
    return refuse(reply, 415, "a POST's body must be application/json");
  const auto accept = r.header("accept");
  const bool events = !accept || contains(accept, "text/event-stream") || contains(accept, "*/*");
  if (!events && !contains(accept, "application/json"))
    return refuse(reply, 406, "a POST must accept application/json or text/event-stream");
  // Depth-checked before a value is built: nlohmann's dump recurses once a level.
  const auto parsed = parse_json(r.body);
  if (!parsed) {
    (void)reply.send(
        400, {{"Content-Type", "application/json"}},
        error_response(nullptr, code::parse_error, "the body is " + parsed.error().message()).dump());
    return;
  }
  const Json& body = *parsed;
  const bool initialize = body.is_object() && body.value("method", Json()) == "initialize";
  std::shared_ptr<HttpSession> s, evicted;
  if (initialize && !r.header("mcp-session-id")) {
    std::lock_guard g(mutex_);
    if (sessions_.size() >= kMaxSessions && !(evicted = evict_idle()))
      return refuse(
          reply, 503,
          "too many sessions (" + std::to_string(kMaxSessions) + "), each serving a request: try later");
    s = std::make_shared<HttpSession>(random_hex(16), o_.server);
    sessions_[s->id()] = s;
  } else {
    s = find(r, reply);
    if (!s) return;
  }
  s->post(body, events, {{"Mcp-Session-Id", s->id()}}, reply);
}

}  // namespace

Expected<std::pair<std::string, int>> parse_listen(const std::string& spec) {
  std::string address = "127.0.0.1", port = spec;
  if (const auto colon = spec.rfind(':'); colon != std::string::npos) {
    address = spec.substr(0, colon);
    port = spec.substr(colon + 1);
  }
  if (address.size() > 2 && address.front() == '[' && address.back() == ']')
    address = address.substr(1, address.size() - 2);
  const bool digits =
      !port.empty() && port.size() <= 5 && port.find_first_not_of("0123456789") == std::string::npos;
  if (!digits || std::stoi(port) > 65535)
    return Error{"--http " + printable(spec) + ": not ADDRESS:PORT (e.g. 127.0.0.1:8931)", "", 0,
                 Errc::bad_config};
  if (address != "127.0.0.1" && address != "localhost" && address != "::1")
    return Error{
        "--http " + printable(spec) + ": Chock serves MCP on the loopback only (127.0.0.1, ::1 or localhost)",
        "", 0, Errc::bad_config};
  return std::make_pair(address, std::stoi(port));
}

bool loopback_host(const std::string& host) {
  std::string h = http::lower(host);
  if (h.starts_with("[::1]")) {
    h = h.substr(5);
  } else {
    for (const char* name : {"127.0.0.1", "localhost"})
      if (h.starts_with(name)) {
        h = h.substr(std::string_view(name).size());
        break;
      }
    if (h.size() == host.size()) return false;
  }
  if (h.empty()) return true;
  return h.size() >= 2 && h.size() <= 6 && h[0] == ':' &&
         h.find_first_not_of("0123456789", 1) == std::string::npos;
}

bool loopback_origin(const std::string& origin) {
  const std::string o = http::lower(origin);
  for (const char* scheme : {"http://", "https://"})
    if (o.starts_with(scheme)) return loopback_host(origin.substr(std::string_view(scheme).size()));
  return false;
}

Expected<std::string> read_token(const std::string& path) {
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return sys_error("open the token file " + path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return sys_error("stat the token file " + path);
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error{"the token file " + path + " must be a file of yours that nobody else can read (chmod 600)",
                 path, 0, Errc::bad_config};
  std::string token;
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf);
  if (n > 0) token.assign(buf, static_cast<std::size_t>(n));
  token = token.substr(0, token.find_first_of("\r\n"));
  if (token.size() < 16 || token.find_first_of(" \t") != std::string::npos)
    return Error{"the token in " + path + " is shorter than 16 characters, or holds a space", path, 0,
                 Errc::bad_config};
  return token;
}

int serve_http(const HttpOptions& o) {
  std::string token;
  if (!o.token_file.empty()) {
    auto t = read_token(o.token_file);
    if (!t) {
      std::fprintf(stderr, "chock: mcp: %s\n", printable(t.error().message()).c_str());
      return 125;
    }
    token = *t;
  } else {
    token = random_hex(32);
  }
  auto listener = http::Listener::open(o.address, o.port);
  if (!listener) {
    std::fprintf(stderr, "chock: mcp: %s\n", printable(listener.error().message()).c_str());
    return 125;
  }
  int stop[2];
  if (::pipe2(stop, O_CLOEXEC) != 0) {
    std::perror("chock: mcp: pipe");
    return 125;
  }
  const UniqueFd stop_read(stop[0]), stop_writer(stop[1]);
  stop_write = stop[1];
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  const std::string url =
      "http://" + listener->address() + ":" + std::to_string(listener->port()) + kEndpoint;
  if (o.token_file.empty())
    std::fprintf(
        stderr, "chock: mcp: serving %s; send \"Authorization: Bearer %s\" (this token is not shown again)\n",
        url.c_str(), token.c_str());
  else
    std::fprintf(stderr, "chock: mcp: serving %s; the bearer token is the one in %s\n", url.c_str(),
                 printable(o.token_file).c_str());
  std::printf("%s\n", url.c_str());
  std::fflush(stdout);
  Transport transport(o, token);
  listener->serve([&transport](const http::Request& r, http::Reply& reply) { transport.handle(r, reply); },
                  stop_read.get(), [&transport] { transport.end_all(); });
  return 0;
}

}  // namespace chock::mcp
