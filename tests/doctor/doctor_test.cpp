// `chock doctor`, for real: the rows this machine gives, and each blocking
// probe made to fail by taking its layer away (doctor-under), so no row can
// read ok merely because the probe never looked.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "process.hpp"

namespace chock {
namespace {

using test::Output;
using test::RunOptions;
using test::TempDir;

const char* const kNamespaceRows[] = {"user namespace", "mount namespace", "pid namespace",
                                      "ipc namespace",  "net namespace",   "nested namespaces"};
constexpr const char* kJitAllow =
    ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } } }\n";
constexpr const char* kJitDeny =
    ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } } }\n";

// One line of the table: "* name    state    reason", split on the runs of
// blanks between columns (a name has single blanks only).
struct HumanRow {
  bool blocks = false;
  std::string state;
  std::string reason;
};

std::map<std::string, HumanRow> human_rows(const std::string& out) {
  std::map<std::string, HumanRow> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.size() < 3 || (line.compare(0, 2, "* ") != 0 && line.compare(0, 2, "  ") != 0)) continue;
    std::vector<std::string> fields;
    std::size_t pos = 2;
    while (pos < line.size() && fields.size() < 2) {
      std::size_t gap = line.find("  ", pos);
      if (gap == std::string::npos) break;
      fields.push_back(line.substr(pos, gap - pos));
      pos = line.find_first_not_of(' ', gap);
    }
    if (fields.size() != 2 || pos == std::string::npos) continue;
    rows[fields[0]] = HumanRow{line[0] == '*', fields[1], line.substr(pos)};
  }
  return rows;
}

// Each run reads the project's files and nothing of the person running the
// tests: its own config and data directories.
class Doctor : public ::testing::Test {
 protected:
  TempDir home_{"chock-doctor-test"};
  std::string project_ = home_ / "project";

  void SetUp() override { ASSERT_EQ(::mkdir(project_.c_str(), 0755), 0); }

  RunOptions options() const {
    RunOptions o;
    o.cwd = project_;
    o.env = {{"XDG_CONFIG_HOME", home_ / "config"}, {"XDG_DATA_HOME", home_ / "data"}};
    return o;
  }
  Output doctor(const std::vector<std::string>& args = {}) const {
    std::vector<std::string> full{"doctor"};
    full.insert(full.end(), args.begin(), args.end());
    return test::chock(full, options());
  }
  // chock doctor with one layer taken away by doctor-under.
  Output doctor_under(const std::string& mode, const std::vector<std::string>& args = {}) const {
    std::vector<std::string> argv{test::program("doctor-under"), mode, "--", test::chock_binary(), "doctor"};
    argv.insert(argv.end(), args.begin(), args.end());
    return test::run_process(argv, options());
  }
  nlohmann::json json(const std::vector<std::string>& args = {}) const {
    std::vector<std::string> full = args;
    full.emplace_back("--json");
    Output o = doctor(full);
    EXPECT_TRUE(o.status == 0 || o.status == 2) << o.err;
    return nlohmann::json::parse(o.out);
  }
};

std::string describe(const Output& o) {
  return "status " + std::to_string(o.status) + "\nstdout:\n" + o.out + "stderr:\n" + o.err;
}

int landlock_abi() {
  long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, 1U);
  return abi > 0 ? static_cast<int>(abi) : 0;
}

bool cgroup2_has_memory_and_pids() {
  std::ifstream mounts("/proc/self/mountinfo");
  for (std::string line; std::getline(mounts, line);) {
    auto dash = line.find(" - cgroup2 ");
    if (dash == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, parent, dev, root, point;
    fields >> id >> parent >> dev >> root >> point;
    std::ifstream controllers(point + "/cgroup.controllers");
    std::string words((std::istreambuf_iterator<char>(controllers)), std::istreambuf_iterator<char>());
    return words.find("memory") != std::string::npos && words.find("pids") != std::string::npos;
  }
  return false;
}

TEST_F(Doctor, EveryNamespaceRowIsOkAndAFirstRunCanWork) {
  Output o = doctor();
  ASSERT_EQ(o.status, 0) << describe(o);
  auto rows = human_rows(o.out);
  for (const char* name : kNamespaceRows) {
    ASSERT_TRUE(rows.count(name)) << name << "\n" << o.out;
    EXPECT_EQ(rows[name].state, "ok") << name << ": " << rows[name].reason;
    EXPECT_TRUE(rows[name].blocks) << name;
  }
  const std::string uid = std::to_string(test::running_as_root() ? 65534 : ::geteuid());
  EXPECT_NE(rows["user namespace"].reason.find("as uid " + uid), std::string::npos)
      << rows["user namespace"].reason;
  EXPECT_NE(o.out.find("a first run can work here"), std::string::npos) << o.out;
  EXPECT_NE(rows["nested namespaces"].reason.find("ENOSPC"), std::string::npos)
      << rows["nested namespaces"].reason;
}

TEST_F(Doctor, LandlockIsOkWithAbi7) {
  const int abi = landlock_abi();
  if (abi != 7)
    GTEST_SKIP() << "this kernel reports Landlock ABI " << abi << "; the row is asserted for ABI 7";
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("landlock")) << o.out;
  EXPECT_EQ(rows["landlock"].state, "ok") << rows["landlock"].reason;
  EXPECT_EQ(rows["landlock"].reason.rfind("ABI 7;", 0), 0U) << rows["landlock"].reason;
  EXPECT_NE(rows["landlock"].reason.find("every filesystem right handled"), std::string::npos);
  EXPECT_NE(rows["landlock"].reason.find("refused with EACCES"), std::string::npos);
}

TEST_F(Doctor, SeccompIsOkAndItsKilledCallEndedInSigsys) {
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("seccomp")) << o.out;
  EXPECT_EQ(rows["seccomp"].state, "ok") << rows["seccomp"].reason;
  EXPECT_NE(rows["seccomp"].reason.find("SIGSYS"), std::string::npos) << rows["seccomp"].reason;
  EXPECT_NE(rows["seccomp"].reason.find("io_uring_setup"), std::string::npos);
}

// A filtered call is made for real: its ruleset, its resolver answered from
// outside, its /etc overlay. Neither row blocks (only filtered calls need them).
TEST_F(Doctor, FilteredNetworkAndResolverFilesAreTriedForReal) {
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("filtered network") && rows.count("resolver files")) << o.out;
  EXPECT_EQ(rows["filtered network"].state, "ok") << rows["filtered network"].reason;
  EXPECT_NE(rows["filtered network"].reason.find("answered from outside the call"), std::string::npos);
  EXPECT_EQ(rows["resolver files"].state, "ok") << rows["resolver files"].reason;
  EXPECT_NE(rows["resolver files"].reason.find("nameserver 127.0.0.53"), std::string::npos);
  EXPECT_FALSE(rows["filtered network"].blocks || rows["resolver files"].blocks);
}

// Where the host mounts files in /etc (a container's), both rows are still
// tried for real and ok, and the resolver files row names the mounts.
TEST_F(Doctor, FilesMountedInEtcAreNamedAndTheFilteredRowsStillWork) {
  TempDir dir("chock-doctor-etc");
  RunOptions o = options();
  const Output out =
      test::run_process(test::with_files_mounted_in_etc(dir.path(), {test::chock_binary(), "doctor"}), o);
  auto rows = human_rows(out.out);
  ASSERT_TRUE(rows.count("filtered network") && rows.count("resolver files")) << describe(out);
  EXPECT_EQ(rows["filtered network"].state, "ok") << rows["filtered network"].reason;
  EXPECT_EQ(rows["resolver files"].state, "ok") << rows["resolver files"].reason;
  EXPECT_NE(rows["resolver files"].reason.find(
                "the host mounts /etc/hostname, /etc/hosts and /etc/resolv.conf in /etc"),
            std::string::npos)
      << rows["resolver files"].reason;
  EXPECT_NE(rows["resolver files"].reason.find("nameserver 127.0.0.53"), std::string::npos);
}

// Linux 6.3+ seals a memfd non-executable; this machine's kernel has it.
TEST_F(Doctor, MemfdExecIsOkAndSaysHowItIsRefused) {
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("memfd exec")) << o.out;
  EXPECT_EQ(rows["memfd exec"].state, "ok") << rows["memfd exec"].reason;
  EXPECT_NE(rows["memfd exec"].reason.find("EACCES"), std::string::npos) << rows["memfd exec"].reason;
  EXPECT_FALSE(rows["memfd exec"].blocks);
}

TEST_F(Doctor, CgroupV2IsDegradedNamingCgroupV1AndDoesNotBlock) {
  if (cgroup2_has_memory_and_pids())
    GTEST_SKIP()
        << "this machine's cgroup2 mount has memory and pids: the cgroup v1 reason is not this machine's";
  Output o = doctor();
  EXPECT_EQ(o.status, 0) << describe(o);
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("cgroup v2")) << o.out;
  const HumanRow& row = rows["cgroup v2"];
  EXPECT_EQ(row.state, "degraded") << row.reason;
  EXPECT_FALSE(row.blocks);
  EXPECT_NE(row.reason.find("no memory and pids controllers (held by cgroup v1)"), std::string::npos)
      << row.reason;
  EXPECT_NE(row.reason.find("the rlimit floor and Chock's memory measurement carry the load"),
            std::string::npos)
      << row.reason;
  EXPECT_EQ(rows["rlimit floor"].state, "ok") << rows["rlimit floor"].reason;
}

// Which mechanism bounds a call's memory: memory.max where delegated, else
// Chock's measurement, with how often it measures.
TEST_F(Doctor, MemoryLimitSaysWhichMechanismHoldsHere) {
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("memory limit")) << o.out;
  const HumanRow& row = rows["memory limit"];
  EXPECT_EQ(row.state, "ok") << row.reason;
  if (cgroup2_has_memory_and_pids())
    EXPECT_EQ(row.reason.rfind("memory.max of the call's own cgroup", 0), 0U) << row.reason;
  else
    EXPECT_EQ(row.reason.rfind("measured by Chock (", 0), 0U) << row.reason;
  EXPECT_NE(row.reason.find("2 GiB unless limited"), std::string::npos) << row.reason;
}

TEST_F(Doctor, DiskLimitSaysWhatACallMayWriteAndTheFloors) {
  Output o = doctor();
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("disk limit")) << o.out;
  EXPECT_EQ(rows["disk limit"].state, "ok") << rows["disk limit"].reason;
  EXPECT_NE(rows["disk limit"].reason.find("has written 10 GiB there"), std::string::npos)
      << rows["disk limit"].reason;
  EXPECT_NE(rows["disk limit"].reason.find("are left free"), std::string::npos) << rows["disk limit"].reason;
}

TEST_F(Doctor, RefusedUserNamespacesTurnTheRowOffAndExit2) {
  Output o = doctor_under("--no-user-namespaces");
  if (o.status == 125) GTEST_SKIP() << "could not make a user namespace to lower its limit in: " << o.err;
  EXPECT_EQ(o.status, 2) << describe(o);
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("user namespace")) << o.out;
  const HumanRow& row = rows["user namespace"];
  EXPECT_EQ(row.state, "off");
  EXPECT_TRUE(row.blocks);
  EXPECT_NE(row.reason.find("unshare(CLONE_NEWUSER): ENOSPC"), std::string::npos) << row.reason;
  EXPECT_NE(row.reason.find("max_user_namespaces is 0"), std::string::npos) << row.reason;
  EXPECT_NE(o.out.find("a first run cannot work here: "), std::string::npos) << o.out;
  // Layers that need no user namespace are still tried, and still hold.
  EXPECT_EQ(rows["landlock"].state, "ok") << rows["landlock"].reason;
  EXPECT_EQ(rows["seccomp"].state, "ok") << rows["seccomp"].reason;
}

TEST_F(Doctor, HiddenLandlockTurnsTheRowOffAndExit2) {
  Output o = doctor_under("--hide-landlock");
  ASSERT_NE(o.status, 125) << describe(o);
  EXPECT_EQ(o.status, 2) << describe(o);
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("landlock")) << o.out;
  EXPECT_EQ(rows["landlock"].state, "off");
  EXPECT_NE(rows["landlock"].reason.find("landlock_create_ruleset: ENOSYS"), std::string::npos)
      << rows["landlock"].reason;
  EXPECT_EQ(rows["seccomp"].state, "ok") << rows["seccomp"].reason;
}

TEST_F(Doctor, HiddenSeccompTurnsTheRowOffAndExit2) {
  Output o = doctor_under("--hide-seccomp");
  ASSERT_NE(o.status, 125) << describe(o);
  EXPECT_EQ(o.status, 2) << describe(o);
  auto rows = human_rows(o.out);
  ASSERT_TRUE(rows.count("seccomp")) << o.out;
  EXPECT_EQ(rows["seccomp"].state, "off");
  EXPECT_NE(rows["seccomp"].reason.find("seccomp(SECCOMP_SET_MODE_FILTER): ENOSYS"), std::string::npos)
      << rows["seccomp"].reason;
  // No filter, so no write^execute rule either; that row does not block on its own.
  EXPECT_EQ(rows["write^execute"].state, "off") << rows["write^execute"].reason;
  EXPECT_FALSE(rows["write^execute"].blocks);
  EXPECT_EQ(rows["landlock"].state, "ok") << rows["landlock"].reason;
}

TEST_F(Doctor, WriteExecuteIsStrictWithoutARuleAndOffWithJitAllow) {
  auto rows = human_rows(doctor().out);
  EXPECT_EQ(rows["write^execute"].state, "strict") << rows["write^execute"].reason;
  EXPECT_NE(rows["write^execute"].reason.find("sandbox.jit answers ask"), std::string::npos);

  test::write_file(project_ + "/chock.zon", kJitAllow);
  Output o = doctor();
  EXPECT_EQ(o.status, 0) << describe(o);
  rows = human_rows(o.out);
  EXPECT_EQ(rows["write^execute"].state, "OFF") << rows["write^execute"].reason;
  EXPECT_FALSE(rows["write^execute"].blocks);
  // It says which rule gave it.
  EXPECT_NE(
      rows["write^execute"].reason.find(
          "sandbox.jit answers allow: the project rule sandbox.jit = allow at " + project_ + "/chock.zon:1:"),
      std::string::npos)
      << rows["write^execute"].reason;
}

TEST_F(Doctor, AnOrganisationDenyHoldsWriteExecuteStrict) {
  test::write_file(project_ + "/chock.zon", kJitAllow);
  test::write_file(home_ / "bundle.zon", kJitDeny);
  Output o = doctor({"--org-bundle", home_ / "bundle.zon"});
  EXPECT_EQ(o.status, 0) << describe(o);
  auto rows = human_rows(o.out);
  const HumanRow& row = rows["write^execute"];
  EXPECT_EQ(row.state, "strict") << row.reason;
  EXPECT_NE(row.reason.find("sandbox.jit answers deny: the bundle rule sandbox.jit = deny at " +
                            home_ / "bundle.zon"),
            std::string::npos)
      << row.reason;
  EXPECT_NE(row.reason.find("held down: the project rule sandbox.jit = allow"), std::string::npos)
      << row.reason;
}

TEST_F(Doctor, AMalformedChockZonIsItsPositionedErrorAndExit2) {
  test::write_file(project_ + "/chock.zon", ".{ .policy = 3 }\n");
  Output o = doctor();
  EXPECT_EQ(o.status, 2) << describe(o);
  EXPECT_EQ(o.out, "");
  EXPECT_EQ(o.err.rfind("chock: " + project_ + "/chock.zon:1:", 0), 0U) << o.err;
}

TEST_F(Doctor, JsonParsesAndEachObjectIsItsHumanRow) {
  Output human = doctor();
  auto rows = human_rows(human.out);
  nlohmann::json array = json();
  ASSERT_TRUE(array.is_array());
  ASSERT_EQ(array.size(), rows.size()) << human.out;
  for (const auto& object : array) {
    const std::string name = object.at("name");
    ASSERT_TRUE(rows.count(name)) << name;
    const HumanRow& row = rows[name];
    EXPECT_EQ(object.at("state").get<std::string>(), row.state) << name;
    EXPECT_EQ(object.at("blocks").get<bool>(), row.blocks) << name;
    const std::string level = object.at("level");
    EXPECT_TRUE(level == "ok" || level == "degraded" || level == "off") << name << ": " << level;
    // Reasons carry free-space figures that can move between two runs.
    if (name != "workspace space") {
      EXPECT_EQ(object.at("reason").get<std::string>(), row.reason) << name;
    }
  }
  for (const char* name : kNamespaceRows) EXPECT_TRUE(rows.count(name)) << name;
  for (const char* name :
       {"landlock", "seccomp", "write^execute", "pidfd", "clone3 into cgroup", "rootless overlayfs",
        "idmapped project", "cgroup v2", "rlimit floor", "capped tmpfs", "git", "workspace space"})
    EXPECT_TRUE(rows.count(name)) << name << " is missing\n" << human.out;
}

TEST_F(Doctor, TheWorkspaceRowsBlockForTheWorkspaceThisProjectGets) {
  // Not a git repository: an overlay workspace, and git is not needed.
  nlohmann::json plain = json();
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& o : plain) by_name[o.at("name")] = o;
  EXPECT_FALSE(by_name["git"].at("blocks").get<bool>());
  // A root caller's overlay is made as root, so only an unprivileged caller needs rootless overlayfs.
  EXPECT_EQ(by_name["rootless overlayfs"].at("blocks").get<bool>(), !test::running_as_root());

  RunOptions git_env;
  git_env.cwd = project_;
  git_env.env = {{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"GIT_CONFIG_SYSTEM", "/dev/null"}};
  ASSERT_EQ(test::run_process({"git", "init", "-q"}, git_env).status, 0);
  test::write_file(project_ + "/a.txt", "a\n");
  ASSERT_EQ(test::run_process({"git", "add", "a.txt"}, git_env).status, 0);
  ASSERT_EQ(
      test::run_process({"git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a"}, git_env)
          .status,
      0);
  nlohmann::json repo = json();
  for (const auto& o : repo) by_name[o.at("name")] = o;
  EXPECT_TRUE(by_name["git"].at("blocks").get<bool>()) << by_name["git"];
  EXPECT_FALSE(by_name["rootless overlayfs"].at("blocks").get<bool>()) << by_name["rootless overlayfs"];
  EXPECT_NE(by_name["rootless overlayfs"].at("reason").get<std::string>().find("is a git repository"),
            std::string::npos);
}

// A root caller's project that is not git: an idmapped lower layer where
// this machine takes one, else a copy (degraded, never blocking); an
// unprivileged caller needs neither.
TEST_F(Doctor, TheIdmappedProjectRowSaysWhetherARootCallersProjectIsCopied) {
  test::write_file(project_ + "/a.txt", "a\n");
  auto row = [this] {
    for (const auto& o : json())
      if (o.at("name") == "idmapped project") return o;
    return nlohmann::json();
  };
  const nlohmann::json here = row();
  ASSERT_FALSE(here.is_null()) << "no idmapped project row";
  EXPECT_FALSE(here.at("blocks").get<bool>()) << here;
  const std::string reason = here.at("reason");
  if (!test::running_as_root()) {
    EXPECT_EQ(here.at("level"), "ok") << here;
    EXPECT_EQ(reason.rfind("not needed: an unprivileged caller", 0), 0U) << reason;
    return;
  }
  if (const std::string why = test::why_no_idmapped_layer(project_); !why.empty()) {
    EXPECT_EQ(here.at("level"), "degraded") << here << " (" << why << ")";
  } else {
    EXPECT_EQ(here.at("level"), "ok") << here;
    EXPECT_NE(
        reason.find("not a copy: an idmapped mount shows " + project_ + "'s owner (uid 0) as uid 65534"),
        std::string::npos)
        << reason;
  }
  // ramfs takes no idmapped mount.
  ASSERT_EQ(::mount("ramfs", project_.c_str(), "ramfs", MS_NOSUID | MS_NODEV, "mode=0755"), 0)
      << std::strerror(errno);
  struct Unmount {
    std::string at;
    ~Unmount() { ::umount2(at.c_str(), MNT_DETACH); }
  } unmount{project_};
  test::write_file(project_ + "/a.txt", "a\n");
  const nlohmann::json on_ramfs = row();
  EXPECT_EQ(on_ramfs.at("level"), "degraded") << on_ramfs;
  EXPECT_FALSE(on_ramfs.at("blocks").get<bool>()) << on_ramfs;
  EXPECT_NE(
      on_ramfs.at("reason").get<std::string>().find("a root caller's project is copied for each session: "),
      std::string::npos)
      << on_ramfs;
}

// A repository of another uid: chock run refuses it (its git would run that
// uid's configuration), so doctor flags the project and still tries and
// prints every layer of the machine.
TEST_F(Doctor, ARepositoryOfAnotherUidIsOneRowAndEveryOtherRowIsPrinted) {
  if (!test::running_as_root()) GTEST_SKIP() << "making a repository of another uid takes root";
  RunOptions git_env;
  git_env.cwd = project_;
  git_env.env = {{"GIT_CONFIG_GLOBAL", "/dev/null"}, {"GIT_CONFIG_SYSTEM", "/dev/null"}};
  ASSERT_EQ(test::run_process({"git", "init", "-q"}, git_env).status, 0);
  ASSERT_EQ(test::run_process({"chown", "-R", "61000:61000", project_}, git_env).status, 0);
  const Output o = doctor();
  EXPECT_EQ(o.status, 2) << o.out << o.err;
  const auto rows = human_rows(o.out);
  for (const char* name : {"user namespace", "landlock", "seccomp", "git", "disk limit"})
    EXPECT_EQ(rows.count(name), 1U) << name << " is missing:\n" << o.out;
  ASSERT_EQ(rows.count("project"), 1U) << o.out;
  const HumanRow& project = rows.at("project");
  EXPECT_TRUE(project.blocks);
  EXPECT_EQ(project.state, "off");
  EXPECT_NE(project.reason.find("refusing a repository that belongs to uid 61000"), std::string::npos)
      << project.reason;
  EXPECT_NE(project.reason.find("git says: fatal: detected dubious ownership"), std::string::npos)
      << project.reason;
  EXPECT_NE(o.out.find("a first run cannot work here: project is off"), std::string::npos) << o.out;
  // Every other row is the machine's: as many as outside a repository, and one more.
  EXPECT_GE(rows.size(), 20U) << o.out;
}

}  // namespace
}  // namespace chock
