// Errors as values: what failed, on which path, and the errno behind it.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace chock {

// Failures a caller may want to act on by kind rather than by message.
enum class Errc {
  other,
  bad_config,                    // the Config asks for something impossible
  landlock_unavailable,          // the kernel has no Landlock: a refusal to run
  cgroup_placement_unsupported,  // a supplied cgroup cannot be entered on this kernel
  cgroup_placement_refused,      // the kernel refused to create the process in it
  hostile_content,               // a workspace holds what the host side refuses to read (a FIFO, a link)
  no_such_session,               // a session id (or its log) that does not exist
};

struct Error {
  std::string what;  // the operation, e.g. "open bind source"
  std::string path;  // the object it was done to; may be empty
  int code = 0;      // errno, or 0 when the failure is not a system call's
  Errc kind = Errc::other;

  // "open bind source: /srv/x: ENOENT (No such file or directory)"
  [[nodiscard]] std::string message() const;
};

// The symbolic name of an errno value ("EPERM"), or "E<number>" when unknown.
[[nodiscard]] const char* errno_name(int code) noexcept;

// Error from the current errno.
[[nodiscard]] Error sys_error(std::string what, std::string path = {});

// A value or an Error. Minimal stand-in for std::expected (C++23).
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Expected(Error error)
      : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT(google-explicit-constructor)

  [[nodiscard]] bool has_value() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return has_value(); }

  T& value() & {
    assert(has_value());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(has_value());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(has_value());
    return std::get<0>(std::move(v_));
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& {
    assert(!has_value());
    return std::get<1>(v_);
  }
  Error&& error() && {
    assert(!has_value());
    return std::get<1>(std::move(v_));
  }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Expected<void> {
 public:
  Expected() = default;
  Expected(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
  [[nodiscard]] bool has_value() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const Error& error() const& {
    assert(!ok_);
    return error_;
  }
  Error&& error() && {
    assert(!ok_);
    return std::move(error_);
  }

 private:
  Error error_;
  bool ok_ = true;
};

}  // namespace chock
