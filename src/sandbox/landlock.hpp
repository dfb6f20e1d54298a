// Landlock: the kernel naming which paths a call may open. The rule list is
// prepared before the fork; apply() runs in the child and only makes system
// calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "chock/config.hpp"
#include "chock/error.hpp"
#include "chock/result.hpp"

namespace chock::landlock {

// Our own constants: the system header is older than the kernel.
namespace right {
inline constexpr std::uint64_t execute = 1ULL << 0;
inline constexpr std::uint64_t write_file = 1ULL << 1;
inline constexpr std::uint64_t read_file = 1ULL << 2;
inline constexpr std::uint64_t read_dir = 1ULL << 3;
inline constexpr std::uint64_t remove_dir = 1ULL << 4;
inline constexpr std::uint64_t remove_file = 1ULL << 5;
inline constexpr std::uint64_t make_char = 1ULL << 6;
inline constexpr std::uint64_t make_dir = 1ULL << 7;
inline constexpr std::uint64_t make_reg = 1ULL << 8;
inline constexpr std::uint64_t make_sock = 1ULL << 9;
inline constexpr std::uint64_t make_fifo = 1ULL << 10;
inline constexpr std::uint64_t make_block = 1ULL << 11;
inline constexpr std::uint64_t make_sym = 1ULL << 12;
inline constexpr std::uint64_t refer = 1ULL << 13;      // ABI 2
inline constexpr std::uint64_t truncate = 1ULL << 14;   // ABI 3
inline constexpr std::uint64_t ioctl_dev = 1ULL << 15;  // ABI 5
}  // namespace right

namespace scope {
inline constexpr std::uint64_t abstract_unix_socket = 1ULL << 0;  // ABI 6
inline constexpr std::uint64_t signal = 1ULL << 1;                // ABI 6
}  // namespace scope

// The rights a rule on a non-directory can hold; the kernel refuses the rest there.
inline constexpr std::uint64_t kFileRights =
    right::execute | right::write_file | right::read_file | right::truncate | right::ioctl_dev;

int probe_abi() noexcept;                   // the kernel's answer; 0 when there is no Landlock
std::uint64_t fs_rights(int abi) noexcept;  // every filesystem right that ABI has
std::uint64_t scopes(int abi) noexcept;     // the scopes used at that ABI (6+)
std::uint64_t grant(chock::Access access, int abi) noexcept;  // the spec's three grant sets, masked
std::uint64_t device_rights(
    int abi) noexcept;  // a device node (/dev/null, tty, pts): open, read, write, ioctl
std::vector<std::string> missing_rights(int abi);  // rights the spec's sets use that this ABI lacks
std::string right_names(std::uint64_t rights);     // "read_file|read_dir"

struct Rule {
  std::string path;  // as seen inside the sandbox, absolute
  std::uint64_t access;
};
struct Prepared {
  int abi;
  std::uint64_t handled;
  std::uint64_t scoped;
  std::vector<Rule> rules;
  std::uint64_t handled_net = 0;  // TCP bind and connect (ABI 4+); no rule grants a port
};

// Errc::landlock_unavailable, "Landlock is not available on this kernel
// (...why...)", when the kernel has none. Masks each rule to the ABI.
Expected<Prepared> prepare(std::vector<Rule> rules);
// The same for a given ABI (and, when abi is 0, the errno the probe got):
// what prepare() does once it has asked the kernel.
Expected<Prepared> prepare_for(int abi, int probe_errno, std::vector<Rule> rules);

struct Failure {
  const char* step;  // "no_new_privs", "landlock_ruleset", "landlock_rule", "landlock_restrict"
  int error;
  int rule;  // index into Prepared::rules for "landlock_rule", else -1
};
// In the child: sets PR_SET_NO_NEW_PRIVS, opens each rule's path
// O_PATH|O_CLOEXEC, adds it, restricts. A rule on a non-directory keeps only
// the rights a file can hold.
bool apply(const Prepared& prepared, Failure* failure) noexcept;

chock::LandlockReport report(const Prepared& prepared);

// The fetcher (chock-fetch-hop) confines this thread before it reads a byte
// from the web: every filesystem right handled and only `reads` granted
// (nothing written anywhere), TCP bind and connect handled with no port
// allowed (ABI 4+: it was handed its one connected socket), abstract unix
// sockets and signals scoped (ABI 6+). What was applied.
Expected<Prepared> confine_fetcher(std::vector<Rule> reads);

}  // namespace chock::landlock
