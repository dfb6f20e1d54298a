// Running one call in a sandbox: spawn, then wait for it or cancel it.
#pragma once

#include <chock/config.hpp>
#include <chock/error.hpp>
#include <chock/result.hpp>

#include <memory>

namespace chock {

// A running call. Owns pidfds for the tree; destroying it kills whatever is
// left of the call and reaps it.
class Child {
 public:
  Child(Child&&) noexcept;
  Child& operator=(Child&&) noexcept;
  ~Child();

  // Blocks until the call ends, its timeout passes, or `cancel_fd` becomes
  // readable (then the whole tree is killed). Callable once.
  Result wait(int cancel_fd = -1);
  // Ends every process of the call, through the pidfd.
  void cancel() noexcept;
  // Forwards a signal to the program (through the keeper).
  void signal(int sig) noexcept;
  // After wait(), for a caller about to exit: the destructor does not wait
  // for the keeper's own exit. Every process of the call has ended by then;
  // what remains is the kernel taking its namespaces down, which the
  // caller's exit hands to init.
  void detach() noexcept;
  // For a caller that will exit after the call, whose next call must not
  // start before this one's namespaces are gone (its mounts: an overlay's
  // upper layer): `held_fd`, a descriptor holding a flock, is kept by a small
  // process of its own until the keeper has exited, and once wait() has
  // returned the destructor does not wait for that exit. Best called right
  // after spawn, while the program starts. False where that process could
  // not start: the destructor waits.
  bool hand_teardown_to(int held_fd) noexcept;
  // The keeper's pidfd (borrowed; -1 when the call never started): its
  // namespaces are the call's (a published port's relay joins its network).
  [[nodiscard]] int keeper_pidfd() const noexcept;

  struct State;
  explicit Child(std::unique_ptr<State> state);

 private:
  std::unique_ptr<State> state_;
};

// A call's sandbox begun before its Config is complete: its first process
// enters the namespaces (most of a call's start-up, in the kernel) while the
// caller goes on with work of its own (opening the session, say). begin()
// takes only who the call runs as (Config::user), its network and its
// limits; spawn(config, begun) finishes it with the whole Config, or, where
// that asks for another identity or other limits, ends it and starts anew.
// Dropped unused, it ends.
class Begun {
 public:
  Begun(Begun&&) noexcept;
  Begun& operator=(Begun&&) noexcept;
  ~Begun();

  struct Impl;
  explicit Begun(std::unique_ptr<Impl> impl);

 private:
  friend Expected<Child> spawn(const Config& config, Begun begun);
  std::unique_ptr<Impl> impl_;
};
Expected<Begun> begin(const Config& early);

// Builds everything the call needs, then forks. Errors before the fork come
// back here; errors after it arrive in Result::setup_failure.
Expected<Child> spawn(const Config& config);
Expected<Child> spawn(const Config& config, Begun begun);

// spawn() then wait().
Expected<Result> run(const Config& config, int cancel_fd = -1);

// What the sandbox can express on this system (the spec's Sandbox.expresses).
// Device passthrough (Config::devices) is Linux's alone, and stays so.
struct Expresses {
  bool device_passthrough = false;
};
[[nodiscard]] Expresses expresses() noexcept;

}  // namespace chock
