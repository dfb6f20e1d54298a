#include "mcp/http_server.hpp"

#include <arpa/inet.h>
#include <llhttp.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>

namespace chock::mcp::http {

namespace {

constexpr int kIdleMs = 300 * 1000;  // a kept connection with nothing sent for this long is closed
constexpr int kSendTimeoutS = 30;    // a client that reads nothing for this long is gone

const char* reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 406:
      return "Not Acceptable";
    case 409:
      return "Conflict";
    case 413:
      return "Content Too Large";
    case 415:
      return "Unsupported Media Type";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Error";
  }
}

std::string head(int status, const Headers& headers) {
  std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason(status) + "\r\n";
  for (const auto& [name, value] : headers) h.append(name).append(": ").append(value).append("\r\n");
  return h;
}

// What llhttp has read of the request being parsed.
struct Parsing {
  llhttp_t parser{};
  llhttp_settings_t settings{};
  Request request;
  std::string field, value;
  bool in_value = false;
  std::size_t head_bytes = 0;
  int refusal = 0;  // the status to answer a request past a bound with
  bool complete = false;
  bool wants_continue = false;
  int fd = -1;
};

Parsing& of(llhttp_t* p) {
  return *static_cast<Parsing*>(p->data);
}

int add_head(Parsing& s, std::string& to, const char* at, std::size_t n) {
  s.head_bytes += n;
  if (s.head_bytes > kMaxHead) {
    s.refusal = 431;
    return -1;
  }
  to.append(at, n);
  return 0;
}

void take_header(Parsing& s) {
  if (!s.field.empty()) s.request.headers.emplace_back(lower(s.field), s.value);
  s.field.clear();
  s.value.clear();
}

void init(Parsing& s) {
  llhttp_settings_init(&s.settings);
  s.settings.on_url = [](llhttp_t* p, const char* at, std::size_t n) {
    return add_head(of(p), of(p).request.target, at, n);
  };
  s.settings.on_header_field = [](llhttp_t* p, const char* at, std::size_t n) {
    Parsing& st = of(p);
    if (st.in_value) take_header(st);
    st.in_value = false;
    return add_head(st, st.field, at, n);
  };
  s.settings.on_header_value = [](llhttp_t* p, const char* at, std::size_t n) {
    Parsing& st = of(p);
    st.in_value = true;
    return add_head(st, st.value, at, n);
  };
  s.settings.on_headers_complete = [](llhttp_t* p) {
    Parsing& st = of(p);
    take_header(st);
    st.in_value = false;
    st.request.method = llhttp_method_name(static_cast<llhttp_method_t>(llhttp_get_method(p)));
    if (p->content_length > kMaxBody && (p->flags & F_CONTENT_LENGTH) != 0) {
      st.refusal = 413;
      return -1;
    }
    const auto expect = st.request.header("expect");
    st.wants_continue = expect && lower(*expect) == "100-continue";
    if (st.wants_continue) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      (void)::send(st.fd, kContinue.data(), kContinue.size(), MSG_NOSIGNAL);
    }
    return 0;
  };
  s.settings.on_body = [](llhttp_t* p, const char* at, std::size_t n) {
    Parsing& st = of(p);
    if (st.request.body.size() + n > kMaxBody) {
      st.refusal = 413;
      return -1;
    }
    st.request.body.append(at, n);
    return 0;
  };
  s.settings.on_message_complete = [](llhttp_t* p) {
    of(p).complete = true;
    return static_cast<int>(HPE_PAUSED);  // handled before the next request is read
  };
  llhttp_init(&s.parser, HTTP_REQUEST, &s.settings);
  s.parser.data = &s;
}

void next_request(Parsing& s) {
  s.request = Request{};
  s.field.clear();
  s.value.clear();
  s.in_value = false;
  s.head_bytes = 0;
  s.complete = false;
}

void serve_connection(int fd, const Handler& handler, int stop_fd) {
  Parsing s;
  s.fd = fd;
  init(s);
  Reply reply(fd);
  char buf[16384];
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    const int ready = ::poll(p, 2, kIdleMs);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0 || p[1].revents != 0) return;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    const char* at = buf;
    std::size_t left = static_cast<std::size_t>(n);
    while (left > 0) {
      const llhttp_errno_t e = llhttp_execute(&s.parser, at, left);
      if (e == HPE_OK) break;
      if (e != HPE_PAUSED || !s.complete) {
        const int status = s.refusal != 0 ? s.refusal : 400;
        (void)reply.send(status, {{"Connection", "close"}, {"Content-Type", "text/plain"}},
                         std::string(reason(status)) + "\n");
        return;
      }
      const char* stopped = llhttp_get_error_pos(&s.parser);
      left -= static_cast<std::size_t>(stopped - at);
      at = stopped;
      const bool keep = llhttp_should_keep_alive(&s.parser) != 0;
      Reply answer(fd);
      handler(s.request, answer);
      if (!answer.alive() || !keep) return;
      next_request(s);
      llhttp_resume(&s.parser);
    }
  }
}

}  // namespace

std::string lower(std::string s) {
  for (auto& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

std::optional<std::string> Request::header(std::string_view name) const {
  for (const auto& [n, v] : headers)
    if (n == name) return v;
  return std::nullopt;
}

bool Reply::write(std::string_view bytes) {
  while (alive_ && !bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      alive_ = false;
      break;
    }
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return alive_;
}

bool Reply::send(int status, const Headers& headers, std::string_view body) {
  answered_ = true;
  return write(head(status, headers) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
               std::string(body));
}

bool Reply::start_events(const Headers& headers) {
  answered_ = true;
  return write(
      head(200, headers) +
      "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n");
}

bool Reply::event(std::string_view data) {
  const std::string event = "data: " + std::string(data) + "\n\n";
  char size[24];
  std::snprintf(size, sizeof size, "%zx\r\n", event.size());
  return write(size + event + "\r\n");
}

bool Reply::event_comment() {
  return write("3\r\n:\n\n\r\n");
}

bool Reply::end_events() {
  return write("0\r\n\r\n");
}

Expected<Listener> Listener::open(const std::string& address, int port) {
  const std::string a = address == "localhost" ? "127.0.0.1" : address;
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  if (a == "127.0.0.1") {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(port));
    v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    len = sizeof *v4;
  } else if (a == "::1" || a == "[::1]") {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(port));
    v6->sin6_addr = in6addr_loopback;
    len = sizeof *v6;
    family = AF_INET6;
  } else {
    return Error{"--http listens on the loopback only (127.0.0.1, ::1 or localhost), not " + address, "", 0,
                 Errc::bad_config};
  }
  if (port < 0 || port > 65535)
    return Error{"--http: no port " + std::to_string(port), "", 0, Errc::bad_config};
  Listener l;
  l.fd_.reset(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!l.fd_) return sys_error("socket, for --http");
  const int one = 1;
  (void)::setsockopt(l.fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(l.fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0)
    return sys_error("bind " + address + " port " + std::to_string(port) + ", for --http");
  if (::listen(l.fd_.get(), 64) != 0) return sys_error("listen, for --http");
  if (::getsockname(l.fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return sys_error("getsockname, for --http");
  l.port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&addr)->sin_port
                                    : reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  l.address_ = family == AF_INET ? "127.0.0.1" : "[::1]";
  return l;
}

void Listener::serve(const Handler& handler, int stop_fd, const std::function<void()>& stopping) {
  // Shared with the connections' threads, which may outlive this frame by
  // the moment it takes their last unlock to return.
  struct Open {
    std::mutex m;
    std::condition_variable ended;
    int count = 0;
  };
  auto open = std::make_shared<Open>();
  for (;;) {
    pollfd p[2] = {{fd_.get(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (p[1].revents != 0) break;
    if (p[0].revents == 0) continue;
    const int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    const timeval send_timeout{kSendTimeoutS, 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &send_timeout, sizeof send_timeout);
    std::unique_lock lock(open->m);
    if (open->count >= kMaxConnections) {
      lock.unlock();
      Reply(fd).send(503, {{"Connection", "close"}, {"Retry-After", "1"}}, "too many connections\n");
      ::close(fd);
      continue;
    }
    ++open->count;
    lock.unlock();
    std::thread([fd, &handler, stop_fd, open] {
      serve_connection(fd, handler, stop_fd);
      ::close(fd);
      std::lock_guard g(open->m);
      --open->count;
      open->ended.notify_all();
    }).detach();
  }
  stopping();
  std::unique_lock lock(open->m);
  open->ended.wait(lock, [&open] { return open->count == 0; });
}

}  // namespace chock::mcp::http
