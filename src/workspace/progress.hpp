// Progress of a long workspace step (a checkout, a copy), measured without
// touching the step: the inodes the target file system has used since the
// step began, of the entries it will make. A thread polls every 250 ms and
// reports once the step has run `after_ms` (a second unless told); quick
// steps say nothing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "chock/workspace.hpp"

namespace chock::workspace {

class ProgressWatch {
 public:
  // `dir` is on the file system the step writes; `total` the entries it makes.
  ProgressWatch(const Progress& report, std::uint32_t after_ms, std::string what, const std::string& dir,
                std::uint64_t total);
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;
  // Stops the thread; a step that was reported gets its last report (done = total).
  ~ProgressWatch();

 private:
  void watch(const std::string& dir);

  const Progress& report_;
  std::string what_;
  std::uint32_t after_ms_;
  std::uint64_t total_;
  std::mutex lock_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool reported_ = false;
  std::thread thread_;
};

}  // namespace chock::workspace
