#include "workspace/progress.hpp"

#include <sys/statvfs.h>

#include <algorithm>
#include <chrono>

namespace chock::workspace {

namespace {

std::uint64_t free_inodes(const std::string& dir) {
  struct statvfs v {};
  return ::statvfs(dir.c_str(), &v) == 0 ? static_cast<std::uint64_t>(v.f_ffree) : 0;
}

}  // namespace

ProgressWatch::ProgressWatch(const Progress& report, std::uint32_t after_ms, std::string what,
                             const std::string& dir, std::uint64_t total)
    : report_(report), what_(std::move(what)), after_ms_(after_ms), total_(total) {
  if (report_ && total_ > 0) thread_ = std::thread([this, dir] { watch(dir); });
}

ProgressWatch::~ProgressWatch() {
  {
    std::lock_guard<std::mutex> hold(lock_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (reported_) report_(what_, total_, total_);
}

void ProgressWatch::watch(const std::string& dir) {
  using namespace std::chrono_literals;
  const std::uint64_t at_start = free_inodes(dir);
  const auto start = std::chrono::steady_clock::now();
  const auto after = std::chrono::milliseconds(after_ms_);
  std::unique_lock<std::mutex> hold(lock_);
  if (after_ms_ == 0) {
    report_(what_, 0, total_);
    reported_ = true;
  }
  while (!wake_.wait_for(hold, 250ms, [this] { return stop_; })) {
    if (std::chrono::steady_clock::now() - start < after) continue;
    const std::uint64_t now = free_inodes(dir);
    const std::uint64_t used = at_start > now ? at_start - now : 0;
    // Directories take inodes too: never more than the whole, and the whole only at the end.
    report_(what_, std::min(used, total_ - 1), total_);
    reported_ = true;
  }
}

}  // namespace chock::workspace
