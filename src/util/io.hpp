// Whole reads and writes: read(2) and write(2) may do less than asked, and a
// signal may interrupt them; every caller wants all the bytes or an error.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// All of `bytes` to `fd`, retrying after EINTR and short writes; the Error
// names `path` (what the descriptor is) and the errno.
[[nodiscard]] Expected<void> write_all(int fd, std::string_view bytes, const std::string& path);

// A regular file mapped read-only, its bytes read without a copy (an index
// of 100,000 entries: no megabytes copied and zeroed page by page). The file
// must not shrink while mapped (a read past its end faults): for files
// replaced by a rename, never rewritten in place.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  ~MappedFile();
  // `path` (no link followed), at most `max_bytes`; EFBIG past them. Populated
  // (read in whole now) unless `populate` is false: a pack read a few pages of.
  [[nodiscard]] static Expected<MappedFile> open(const std::string& path, std::size_t max_bytes,
                                                 bool populate = true);
  [[nodiscard]] std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

// Everything `fd` has left to read, retrying after EINTR; EFBIG past
// `max_bytes`. The Error names `path`.
[[nodiscard]] Expected<std::string> read_all(int fd, const std::string& path, std::size_t max_bytes);

}  // namespace chock
