// chock run --json: the program's stdout and stderr and Chock's own lines are
// captured instead of shown, and one JSON object (docs/schemas/run.schema.json)
// is printed on stdout when the call is over.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::cli {

class JsonCapture {
 public:
  static constexpr std::size_t kCap = 16U << 20;  // of each stream; the rest is counted
  // Redirects this process's stderr (Chock's own lines) into the capture.
  [[nodiscard]] static Expected<std::unique_ptr<JsonCapture>> start();
  JsonCapture(const JsonCapture&) = delete;
  JsonCapture& operator=(const JsonCapture&) = delete;
  ~JsonCapture();

  [[nodiscard]] int program_stdout() const { return out_write_.get(); }
  [[nodiscard]] int program_stderr() const { return err_write_.get(); }
  void set_session(std::string id) { session_ = std::move(id); }
  void set_result(std::string json) { result_ = std::move(json); }
  // Restores stderr, waits for the streams to end and prints the object; `status`.
  int finish(int status);

 private:
  JsonCapture() = default;
  struct Stream {
    std::string head;
    std::uint64_t total = 0;
    std::thread reader;
  };
  static void read_all(int fd, Stream& into);
  void restore();  // stderr back, the streams read to their end
  UniqueFd out_write_, err_write_, chock_write_, saved_stderr_;
  Stream out_, err_, chock_;
  std::string session_, result_;
  bool finished_ = false;
};

}  // namespace chock::cli
