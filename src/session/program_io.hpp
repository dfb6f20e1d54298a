// The program's stdin and output where the caller does not hand over
// descriptors of its own: bytes given as its input (Request::input), and
// its stdout and stderr given to Hooks::output as they come. One thread of
// the engine moves them while the call runs.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::session {

class ProgramIo {
 public:
  using Output = std::function<void(int stream, std::string_view bytes)>;

  // Before the spawn: pipes in config.stdio where `input` is given or
  // `output` is set; nothing otherwise.
  [[nodiscard]] static Expected<ProgramIo> prepare(const std::optional<std::string>& input, Output output,
                                                   Config& config);

  ProgramIo() = default;
  ProgramIo(ProgramIo&&) noexcept = default;
  ProgramIo& operator=(ProgramIo&&) = delete;
  ProgramIo(const ProgramIo&) = delete;
  ProgramIo& operator=(const ProgramIo&) = delete;
  ~ProgramIo();

  // After the spawn: lets go of the program's ends and starts moving bytes.
  void start();
  // After the call: the output read to its end (every process holding it
  // has ended by then), the thread joined.
  void finish();

 private:
  void move_bytes();

  std::string input_;
  Output output_;
  UniqueFd in_write_, out_read_, err_read_;   // ours
  UniqueFd in_read_, out_write_, err_write_;  // the program's, until start()
  std::thread thread_;
};

}  // namespace chock::session
