// The switch a known program has for what a layer refuses it. Chock names the
// program's own way out (Chromium's `--no-sandbox`, V8's `--jitless`) beside
// the rule to change, so a person is never sent to a neighbouring cause.
// Called by the keeper after the fork: no allocation, constant strings only.
#pragma once

namespace chock::program_hints {

// The kind of program a name (an executable's base name, as the keeper read
// it from /proc/<pid>/exe) belongs to.
enum class Kind { other, chromium, node, firefox, bubblewrap };
[[nodiscard]] Kind kind_of(const char* program) noexcept;

// Why each is refused, completed by the program's own switch below.
inline constexpr const char* kJitReason =
    "a JIT needs `sandbox.jit = allow` in chock.zon (--allow-jit for chock sandbox), or ";
inline constexpr const char* kNestedSandboxReason =
    "a sandbox inside a call needs one, which Chock refuses by design; Chock is the sandbox, so run it "
    "with its own off: ";

// How the program runs without writable and executable memory, as a phrase
// that completes "or ...": "Chromium's own switch, `--js-flags=--jitless`".
[[nodiscard]] const char* without_jit(Kind kind) noexcept;

// How the program runs without a sandbox of its own, as a phrase that
// completes "run it with its own sandbox off: ...".
[[nodiscard]] const char* without_own_sandbox(Kind kind) noexcept;

}  // namespace chock::program_hints
