#include "cli/json_capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "util/json.hpp"
#include "util/split.hpp"

namespace chock::cli {

void JsonCapture::read_all(int fd, Stream& into) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    into.total += static_cast<std::uint64_t>(n);
    if (into.head.size() < kCap)
      into.head.append(buf, std::min(static_cast<std::size_t>(n), kCap - into.head.size()));
  }
  ::close(fd);
}

Expected<std::unique_ptr<JsonCapture>> JsonCapture::start() {
  std::unique_ptr<JsonCapture> c(new JsonCapture());
  int pipes[3][2];
  for (auto& p : pipes)
    if (::pipe2(p, O_CLOEXEC) != 0) return sys_error("pipe, for --json");
  c->out_write_.reset(pipes[0][1]);
  c->err_write_.reset(pipes[1][1]);
  c->chock_write_.reset(pipes[2][1]);
  c->out_.reader = std::thread(read_all, pipes[0][0], std::ref(c->out_));
  c->err_.reader = std::thread(read_all, pipes[1][0], std::ref(c->err_));
  c->chock_.reader = std::thread(read_all, pipes[2][0], std::ref(c->chock_));
  std::fflush(stderr);
  c->saved_stderr_.reset(::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!c->saved_stderr_ || ::dup2(c->chock_write_.get(), STDERR_FILENO) < 0)
    return sys_error("dup2, for --json");
  return c;
}

void JsonCapture::restore() {
  std::fflush(stderr);
  ::dup2(saved_stderr_.get(), STDERR_FILENO);
  out_write_.reset();
  err_write_.reset();
  chock_write_.reset();
  for (Stream* s : {&out_, &err_, &chock_})
    if (s->reader.joinable()) s->reader.join();
}

int JsonCapture::finish(int status) {
  if (finished_) return status;
  finished_ = true;
  restore();
  const nlohmann::json lines = output_lines(chock_.head);
  auto result = parse_json(result_);
  nlohmann::json j{{"session", session_.empty() ? nlohmann::json(nullptr) : nlohmann::json(session_)},
                   {"exit_status", status},
                   {"stdout", out_.head},
                   {"stdout_bytes_cut", out_.total - out_.head.size()},
                   {"stderr", err_.head},
                   {"stderr_bytes_cut", err_.total - err_.head.size()},
                   {"chock", lines},
                   {"result", result ? std::move(*result) : nlohmann::json(nullptr)}};
  std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return status;
}

JsonCapture::~JsonCapture() {
  if (!finished_) restore();
}

}  // namespace chock::cli
