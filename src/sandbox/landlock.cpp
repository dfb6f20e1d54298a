#include "sandbox/landlock.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstddef>
#include <utility>

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#ifndef SYS_landlock_add_rule
#define SYS_landlock_add_rule 445
#endif
#ifndef SYS_landlock_restrict_self
#define SYS_landlock_restrict_self 446
#endif

namespace chock::landlock {
namespace {

constexpr unsigned kCreateRulesetVersion = 1U << 0;
constexpr int kRulePathBeneath = 1;
constexpr std::uint64_t kNetBindTcp = 1ULL << 0;  // ABI 4
constexpr std::uint64_t kNetConnectTcp = 1ULL << 1;

// The kernel's structs, as of ABI 6; older kernels take a prefix.
struct RulesetAttr {
  std::uint64_t handled_access_fs;
  std::uint64_t handled_access_net;  // ABI 4
  std::uint64_t scoped;              // ABI 6
};
struct __attribute__((packed)) PathBeneathAttr {
  std::uint64_t allowed_access;
  std::int32_t parent_fd;
};

constexpr std::array<std::pair<std::uint64_t, const char*>, 16> kRightNames = {{
    {right::execute, "execute"},
    {right::write_file, "write_file"},
    {right::read_file, "read_file"},
    {right::read_dir, "read_dir"},
    {right::remove_dir, "remove_dir"},
    {right::remove_file, "remove_file"},
    {right::make_char, "make_char"},
    {right::make_dir, "make_dir"},
    {right::make_reg, "make_reg"},
    {right::make_sock, "make_sock"},
    {right::make_fifo, "make_fifo"},
    {right::make_block, "make_block"},
    {right::make_sym, "make_sym"},
    {right::refer, "refer"},
    {right::truncate, "truncate"},
    {right::ioctl_dev, "ioctl_dev"},
}};

// Every right the spec's grant sets and the device nodes use, at the newest ABI.
constexpr std::uint64_t kAbi1Rights = (1ULL << 13) - 1;  // execute .. make_sym
constexpr std::uint64_t kAllRights = kAbi1Rights | right::refer | right::truncate | right::ioctl_dev;
constexpr std::uint64_t kReadWrite = kAllRights & ~(right::make_char | right::make_block);
constexpr std::uint64_t kDevice = right::read_file | right::write_file | right::ioctl_dev;

std::string unavailable_reason(int probe_errno) {
  switch (probe_errno) {
    case ENOSYS:
      return "landlock_create_ruleset: ENOSYS, the kernel was built without Landlock or a filter hides it";
    case EOPNOTSUPP:
      return "landlock_create_ruleset: EOPNOTSUPP, Landlock is built in but not enabled: add landlock to "
             "the lsm= boot parameter";
    default:
      return std::string("landlock_create_ruleset: ") + errno_name(probe_errno);
  }
}

}  // namespace

int probe_abi() noexcept {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, kCreateRulesetVersion);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

std::uint64_t fs_rights(int abi) noexcept {
  if (abi < 1) return 0;
  std::uint64_t rights = kAbi1Rights;
  if (abi >= 2) rights |= right::refer;
  if (abi >= 3) rights |= right::truncate;
  if (abi >= 5) rights |= right::ioctl_dev;
  return rights;
}

std::uint64_t scopes(int abi) noexcept {
  return abi >= 6 ? scope::abstract_unix_socket | scope::signal : 0;
}

std::uint64_t grant(chock::Access access, int abi) noexcept {
  std::uint64_t set = 0;
  switch (access) {
    case Access::read_only:
      set = right::execute | right::read_file | right::read_dir;
      break;
    case Access::read_only_file:
      set = right::execute | right::read_file;
      break;
    case Access::read_write:
      set = kReadWrite;
      break;
  }
  return set & fs_rights(abi);
}

std::uint64_t device_rights(int abi) noexcept {
  return kDevice & fs_rights(abi);
}

std::vector<std::string> missing_rights(int abi) {
  std::vector<std::string> missing;
  const std::uint64_t lacking = kAllRights & ~fs_rights(abi);
  for (const auto& [bit, name] : kRightNames) {
    if ((lacking & bit) != 0) missing.emplace_back(name);
  }
  return missing;
}

std::string right_names(std::uint64_t rights) {
  std::string out;
  for (const auto& [bit, name] : kRightNames) {
    if ((rights & bit) == 0) continue;
    if (!out.empty()) out += '|';
    out += name;
  }
  return out;
}

Expected<Prepared> prepare(std::vector<Rule> rules) {
  errno = 0;
  const int abi = probe_abi();
  return prepare_for(abi, abi == 0 ? errno : 0, std::move(rules));
}

Expected<Prepared> prepare_for(int abi, int probe_errno, std::vector<Rule> rules) {
  if (abi < 1) {
    return Error{"Landlock is not available on this kernel (" + unavailable_reason(probe_errno) + ")", "", 0,
                 Errc::landlock_unavailable};
  }
  const std::uint64_t handled = fs_rights(abi);
  for (auto& rule : rules) {
    if (rule.path.empty() || rule.path.front() != '/')
      return Error{"Landlock rule needs an absolute path", rule.path, 0, Errc::bad_config};
    const std::uint64_t asked = rule.access;
    rule.access &= handled;
    if (rule.access == 0) {
      return Error{"Landlock rule grants no right this kernel has (asked " + right_names(asked) + ")",
                   rule.path, 0, Errc::bad_config};
    }
  }
  return Prepared{abi, handled, scopes(abi), std::move(rules), 0};
}

bool apply(const Prepared& prepared, Failure* failure) noexcept {
  auto fail = [failure](const char* step, int rule) {
    if (failure != nullptr) *failure = Failure{step, errno, rule};
    return false;
  };
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("no_new_privs", -1);

  RulesetAttr attr{prepared.handled, prepared.handled_net, prepared.scoped};
  // A kernel before ABI 6 knows only a prefix of the struct; send just that.
  const std::size_t size = prepared.abi >= 6 ? sizeof attr : prepared.abi >= 4 ? 16 : 8;
  const int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
  if (ruleset < 0) return fail("landlock_ruleset", -1);

  for (std::size_t i = 0; i < prepared.rules.size(); ++i) {
    const Rule& rule = prepared.rules[i];
    const int fd = ::open(rule.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) {
      fail("landlock_rule", static_cast<int>(i));
      ::close(ruleset);
      return false;
    }
    PathBeneathAttr beneath{rule.access, fd};
    long added = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &beneath, 0);
    struct stat st {};
    if (added != 0 && errno == EINVAL && ::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
      // A file holds only the rights a file can: asked only when the kernel
      // refused the directory rights, so a directory's rule costs no fstat.
      beneath.allowed_access &= kFileRights;
      added = beneath.allowed_access == 0
                  ? (errno = ENOTDIR, -1)
                  : ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &beneath, 0);
    }
    if (added != 0) {
      fail("landlock_rule", static_cast<int>(i));
      ::close(fd);
      ::close(ruleset);
      return false;
    }
    ::close(fd);
  }
  if (::syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
    fail("landlock_restrict", -1);
    ::close(ruleset);
    return false;
  }
  ::close(ruleset);
  return true;
}

chock::LandlockReport report(const Prepared& prepared) {
  LandlockReport out;
  out.abi = prepared.abi;
  out.handled = prepared.handled;
  out.missing = missing_rights(prepared.abi);
  out.scoped_abstract_unix = (prepared.scoped & scope::abstract_unix_socket) != 0;
  out.scoped_signals = (prepared.scoped & scope::signal) != 0;
  return out;
}

Expected<Prepared> confine_fetcher(std::vector<Rule> reads) {
  auto prepared = prepare(std::move(reads));
  if (!prepared) return Error{"confine the fetcher: " + prepared.error().what, "", 0, prepared.error().kind};
  if (prepared->abi >= 4) prepared->handled_net = kNetBindTcp | kNetConnectTcp;
  Failure failure{};
  if (!apply(*prepared, &failure)) {
    const std::string path =
        failure.rule >= 0 ? prepared->rules[static_cast<std::size_t>(failure.rule)].path : "";
    return Error{std::string("confine the fetcher: ") + failure.step, path, failure.error};
  }
  return prepared;
}

}  // namespace chock::landlock
