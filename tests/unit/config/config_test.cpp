// The schemas of chock.zon, the operator's config.zon and the organisation
// bundle (from text and from real files), and the ratchet over their limits.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "config/chock_zon.hpp"

namespace {

using namespace chock;
using namespace chock::config;

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::uint64_t kGiB = 1ULL << 30;

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "chock-config-XXXXXX").string();
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string write(const std::string& relative, const std::string& text) const {
    const std::filesystem::path full = std::filesystem::path(path_) / relative;
    std::filesystem::create_directories(full.parent_path());
    std::ofstream(full, std::ios::binary) << text;
    return full.string();
  }
  void mkdir(const std::string& relative) const {
    std::filesystem::create_directories(path_ + "/" + relative);
  }

 private:
  std::string path_;
};

// "path:line:col" of the first `needle` in `text`.
std::string where(const std::string& path, const std::string& text, const std::string& needle) {
  const std::size_t at = text.find(needle);
  if (at == std::string::npos) return "(needle not in text)";
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < at; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return path + ":" + std::to_string(line) + ":" + std::to_string(column);
}

constexpr const char* kPath = "/p/chock.zon";

std::string project_refusal(const std::string& text,
                            const std::string& project_dir = "/nonexistent-chock-dir") {
  auto p = parse_project(text, kPath, project_dir);
  if (p) return "accepted";
  return p.error().message();
}

// A refusal expected at `needle`: {text, needle, what}.
struct Refusal {
  std::string text;
  std::string needle;
  std::string what;
};

void expect_refusals(const std::vector<Refusal>& cases,
                     const std::string& project_dir = "/nonexistent-chock-dir") {
  for (const Refusal& c : cases)
    EXPECT_EQ(project_refusal(c.text, project_dir), where(kPath, c.text, c.needle) + ": error: " + c.what)
        << c.text;
}

TEST(ConfigProject, AWholeFile) {
  const std::string text =
      "// The project's own settings.\n"
      ".{\n"
      "    .policy = .{\n"
      "        .rules = .{\n"
      "            .{ .action = \"sandbox.jit\", .decision = .allow },\n"
      "            .{ .action = \"net.connect.com.github.*\", .decision = .ask },\n"
      "            .{ .action = \"workspace.apply\", .decision = .deny },\n"
      "        },\n"
      "    },\n"
      "    .deny_read = .{ \".env\", \"config/secrets.zon\" },\n"
      "    .limits = .{ .processes = 128, .memory = \"4GiB\" },\n"
      "    .network = .filtered,\n"
      "}\n";
  auto p = parse_project(text, kPath, "/nonexistent-chock-dir");
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->path, kPath);
  EXPECT_EQ(p->bytes, text);
  ASSERT_EQ(p->rules.size(), 3u);
  EXPECT_EQ(p->rules[0].action, "sandbox.jit");
  EXPECT_EQ(p->rules[0].decision, policy::Decision::allow);
  EXPECT_EQ(p->rules[0].origin, "/p/chock.zon:5:13");
  EXPECT_EQ(p->rules[1].action, "net.connect.com.github.*");
  EXPECT_EQ(p->rules[1].decision, policy::Decision::ask);
  EXPECT_EQ(p->rules[2].decision, policy::Decision::deny);
  EXPECT_EQ(p->rules[2].origin, "/p/chock.zon:7:13");
  EXPECT_EQ(p->deny_read, (std::vector<std::string>{".env", "config/secrets.zon"}));
  ASSERT_TRUE(p->limits.processes);
  EXPECT_EQ(p->limits.processes->kind, LimitValue::Kind::absolute);
  EXPECT_EQ(p->limits.processes->value, 128u);
  EXPECT_EQ(p->limits.processes->origin, "/p/chock.zon:11:31");
  ASSERT_TRUE(p->limits.memory);
  EXPECT_EQ(p->limits.memory->value, 4 * kGiB);
  EXPECT_EQ(p->network, Network::filtered);
}

TEST(ConfigProject, EmptyAndShares) {
  auto empty = parse_project(".{}", kPath, "/nonexistent-chock-dir");
  ASSERT_TRUE(empty) << empty.error().message();
  EXPECT_TRUE(empty->rules.empty());
  EXPECT_FALSE(empty->limits.processes);
  EXPECT_FALSE(empty->network);
  auto shares = parse_project(
      ".{ .limits = .{ .processes = \"50%\", .memory = \"100%\" }, .policy = .{ .rules = .{} } }", kPath,
      "/nonexistent-chock-dir");
  ASSERT_TRUE(shares) << shares.error().message();
  EXPECT_EQ(shares->limits.processes->kind, LimitValue::Kind::percent);
  EXPECT_EQ(shares->limits.processes->value, 50u);
  EXPECT_EQ(shares->limits.memory->kind, LimitValue::Kind::percent);
  EXPECT_EQ(shares->limits.memory->value, 100u);
}

TEST(ConfigProject, UnknownKeysAndWrongTypes) {
  const std::string rules = ".{ .policy = .{ .rules = .{ ";
  expect_refusals({
      {".{ .polcy = .{} }", ".polcy",
       "unknown key '.polcy' in chock.zon; the keys there are .policy, .deny_read, .carry, .limits, .network "
       "and .devices"},
      {".{ .devices = .{ .{ .name = \"kvm\" } } }", ".name",
       "unknown key '.name' in a device; the only key there is .action"},
      {".{ .devices = .{ .{ .action = \"device.path.etc.passwd\" } } }", "\"device.path",
       "the device action device.path.etc.passwd names a path outside /dev (device.path.dev.NAME)"},
      {".{ .devices = .{ .{ .action = \"net.connect.x.1\" } } }", "\"net.",
       "the device action net.connect.x.1 is not one of device.usb.VID.PID, device.tty.serial.SERIAL, "
       "device.tty.VID.PID, device.path.dev.NAME"},
      {".{ 1 }", ".{", "expected a struct such as .{ .name = value }, found a tuple"},
      {"\"chock\"", "\"", "expected a struct such as .{ .name = value }, found a string"},
      {".{ .policy = .{ .rule = .{} } }", ".rule",
       "unknown key '.rule' in .policy; the only key there is .rules"},
      {".{ .policy = .allow }", ".allow",
       "expected a struct such as .{ .name = value }, found an enum literal"},
      {".{ .policy = .{ .rules = .{ .action = \"x\" } } }", ".{ .action",
       "expected a tuple such as .{ a, b }, found a struct"},
      {rules + "5 } } }", "5", "expected a struct such as .{ .name = value }, found an integer"},
      {rules + ".{ .action = 5, .decision = .allow } } } }", "5", "expected a string, found an integer"},
      {rules + ".{ .action = \"sandbox.jit\" } } } }", ".{ .action",
       "a rule needs .decision, as in .{ .action = \"sandbox.jit\", .decision = .allow }"},
      {rules + ".{ .decision = .deny } } } }", ".{ .decision",
       "a rule needs .action, as in .{ .action = \"sandbox.jit\", .decision = .allow }"},
      {rules + ".{ .action = \"sandbox.jit\", .decision = .allow, .why = \"node\" } } } }", ".why",
       "unknown key '.why' in a rule; the keys there are .action and .decision"},
      {rules + ".{ .action = \"sandbox.jit\", .decision = \"allow\" } } } }", "\"allow\"",
       "expected an enum literal (.allow, .ask or .deny), found a string"},
      {rules + ".{ .action = \"sandbox.jit\", .decision = .maybe } } } }", ".maybe",
       "unknown decision '.maybe'; a decision is .allow, .ask or .deny"},
      {rules + ".{ .action = \"*\", .decision = .deny } } } }", "\"*\"",
       policy::validate_action("*").error().what},
      {rules + ".{ .action = \"Net.x\", .decision = .deny } } } }", "\"Net",
       policy::validate_action("Net.x").error().what},
      {".{ .network = \"host\" }", "\"host\"",
       "expected an enum literal (.none, .filtered or .host), found a string"},
      {".{ .network = .wifi }", ".wifi", "unknown network '.wifi'; the network is .none, .filtered or .host"},
      {".{ .limits = 5 }", "5", "expected a struct such as .{ .name = value }, found an integer"},
      {".{ .limits = .{ .cpu = 1 } }", ".cpu",
       "unknown key '.cpu' in .limits; the keys there are .processes, .memory, .timeout, .disk and .cache"},
  });
}

TEST(ConfigProject, LimitValues) {
  expect_refusals({
      {".{ .limits = .{ .memory = \"150%\" } }", "\"150%\"",
       "\"150%\" is more than the whole machine; a share is 1% to 100%"},
      {".{ .limits = .{ .processes = \"101%\" } }", "\"101%\"",
       "\"101%\" is more than the whole machine; a share is 1% to 100%"},
      {".{ .limits = .{ .memory = \"100000000000000000000%\" } }", "\"1",
       "\"100000000000000000000%\" is more than the whole machine; a share is 1% to 100%"},
      {".{ .limits = .{ .memory = \"0%\" } }", "\"0%\"",
       "a share of 0% leaves nothing; a share is 1% to 100%"},
      {".{ .limits = .{ .memory = \"50.5%\" } }", "\"50.5%\"",
       "\"50.5%\" is not a share; memory takes a size such as \"4GiB\" or a whole percent such as \"50%\""},
      {".{ .limits = .{ .memory = \"%\" } }", "\"%\"",
       "\"%\" is not a share; memory takes a size such as \"4GiB\" or a whole percent such as \"50%\""},
      {".{ .limits = .{ .processes = \"many\" } }", "\"many\"",
       "\"many\" is not a share; processes takes a count such as 256 or a whole percent such as \"50%\""},
      {".{ .limits = .{ .memory = \"4GB\" } }", "\"4GB\"",
       "memory 4GB: say KiB, MiB, GiB or TiB (powers of 1024)"},
      {".{ .limits = .{ .memory = \"512KiB\" } }", "\"512KiB\"",
       "memory below 1MiB leaves a program no room to start"},
      {".{ .limits = .{ .memory = \"4\\x1bGiB\" } }", "\"4",
       "\"4\\x1bGiB\" is not a size; sizes look like \"4096\", \"512MiB\" or \"4GiB\""},
      {".{ .limits = .{ .memory = 4096 } }", "4096",
       "expected a string such as \"4GiB\" or \"50%\", found an integer"},
      {".{ .limits = .{ .processes = 0 } }", "0", "processes must be at least 1: the program itself is one"},
      {".{ .limits = .{ .processes = -4 } }", "-4",
       "processes must be at least 1: the program itself is one"},
      {".{ .limits = .{ .processes = 5000000 } }", "5000000",
       "processes is at most 4194304, the kernel's own limit"},
      {".{ .limits = .{ .processes = true } }", "true",
       "expected an integer such as 256 or a share such as \"50%\", found a boolean"},
  });
}

TEST(ConfigProject, DenyReadEntries) {
  TempDir project;
  ASSERT_FALSE(project.path().empty());
  project.mkdir("build");
  project.mkdir("keys");
  ASSERT_EQ(::symlink("build", (project.path() + "/link").c_str()), 0);
  auto list = [](const std::string& entries) { return ".{ .deny_read = .{ " + entries + " } }"; };
  expect_refusals(
      {
          {list("\"/etc/passwd\""), "\"/etc",
           "\"/etc/passwd\" is absolute; deny_read takes paths relative to the project"},
          {list("\".env\", \"../x\""), "\"../x\"",
           "\"../x\" has a '..' component; write the path without it"},
          {list("\"./x\""), "\"./x\"", "\"./x\" has a '.' component; write the path without it"},
          {list("\"a/./b\""), "\"a/./b\"", "\"a/./b\" has a '.' component; write the path without it"},
          {list("\"a/..\""), "\"a/..\"", "\"a/..\" has a '..' component; write the path without it"},
          {list("\"a//b\""), "\"a//b\"", "\"a//b\" has an empty component ('//')"},
          {list("\"*.pem\""), "\"*.pem\"",
           "\"*.pem\" is a glob; deny_read takes file paths, one entry a file"},
          {list("\"key?\""), "\"key?\"", "\"key?\" is a glob; deny_read takes file paths, one entry a file"},
          {list("\"a[1]\""), "\"a[1]\"", "\"a[1]\" is a glob; deny_read takes file paths, one entry a file"},
          {list("\"keys/\""), "\"keys/\"", "\"keys/\" ends in '/'; deny_read takes files, not directories"},
          {list("\"build\""), "\"build\"", "\"build\" is a directory in the project; deny_read takes files"},
          {list("\"chock.zon\""), "\"chock.zon\"", "chock.zon itself cannot be denied: the sandbox reads it"},
          {list("\"\""), "\"\"", "an empty deny_read entry"},
          {list("\"a\\x00b\""), "\"a", "a deny_read entry holds a NUL byte"},
          {list("\"" + std::string(4097, 'a') + "\""), "\"a", "a deny_read entry longer than 4096 bytes"},
          {list("\"a\\x1b[2Jb\\n\""), "\"a\\x1b",
           "\"a\\x1b[2Jb\\x0a\" is a glob; deny_read takes file paths, one entry a file"},
          {list("5"), "5", "expected a string, found an integer"},
          {".{ .deny_read = \".env\" }", "\".env\"", "expected a tuple such as .{ a, b }, found a string"},
      },
      project.path());
  // lstat: a symbolic link to a directory is not itself a directory, and
  // chock.zon below the root is a different file.
  auto p =
      parse_project(list("\"link\", \"keys/id_rsa\", \"sub/chock.zon\", \".env\""), kPath, project.path());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->deny_read.size(), 4u);
}

TEST(ConfigProject, CarryEntries) {
  TempDir project;
  ASSERT_FALSE(project.path().empty());
  project.mkdir("node_modules");
  project.mkdir("vendor");
  ASSERT_EQ(::symlink("vendor", (project.path() + "/linked").c_str()), 0);
  std::ofstream(project.path() + "/.env") << "SECRET=1\n";
  auto list = [](const std::string& entries) { return ".{ .carry = .{ " + entries + " } }"; };
  auto both = [](const std::string& carry) {
    return ".{ .deny_read = .{ \".env\", \"vendor/key.pem\" }, .carry = .{ " + carry + " } }";
  };
  expect_refusals(
      {
          {list("\"../x\""), "\"../x\"", "\"../x\" has a '..' component; write the path without it"},
          {list("\"/usr/lib\""), "\"/usr",
           "\"/usr/lib\" is absolute; carry takes paths relative to the project"},
          {list("\"node_modules/\""), "\"node_modules/\"",
           "\"node_modules/\" ends in '/'; write carry entries without it"},
          {list("\"*_modules\""), "\"*_modules\"",
           "\"*_modules\" is a glob; carry takes directory paths, one entry a directory"},
          {list("\".git\""), "\".git\"", "\".git\" is or holds .git; the repository is never carried"},
          {list("\"a/.git/b\""), "\"a/.git/b\"",
           "\"a/.git/b\" is or holds .git; the repository is never carried"},
          {list("\"linked\""), "\"linked\"",
           "\"linked\" is a symbolic link; carry takes directories of the project"},
          {both("\".env\""), "\".env\" }",
           "\".env\" is denied by deny_read (\".env\"); a denied path is never carried"},
          {list("\".env\""), "\".env\"",
           "\".env\" is not a directory; carry takes directories of the project"},
          {".{ .carry = \"node_modules\" }", "\"node_modules\"",
           "expected a tuple such as .{ a, b }, found a string"},
      },
      project.path());
  auto p = parse_project(list("\"node_modules\", \".venv\""), kPath, project.path());
  ASSERT_TRUE(p) << p.error().message();
  EXPECT_EQ(p->carry, (std::vector<std::string>{"node_modules", ".venv"}));
  // A denied file inside a carried directory does not refuse it: it is covered there.
  auto inside = parse_project(both("\"vendor\""), kPath, project.path());
  ASSERT_TRUE(inside) << inside.error().message();
  EXPECT_EQ(inside->carry, (std::vector<std::string>{"vendor"}));
}

TEST(ConfigProject, AtMost64DenyReadEntries) {
  std::string entries;
  for (int i = 0; i < 64; ++i) entries += "\"f" + std::to_string(i) + "\", ";
  auto full = parse_project(".{ .deny_read = .{ " + entries + "} }", kPath, "/nonexistent-chock-dir");
  ASSERT_TRUE(full) << full.error().message();
  EXPECT_EQ(full->deny_read.size(), 64u);
  const std::string text = ".{ .deny_read = .{ " + entries + "\"f64\" } }";
  EXPECT_EQ(project_refusal(text), where(kPath, text, "\"f64\"") + ": error: more than 64 deny_read entries");
}

TEST(ConfigProject, SyntaxErrorsKeepTheirPosition) {
  EXPECT_EQ(project_refusal(".{\n  .network = .none\n  .limits = .{},\n}"),
            "/p/chock.zon:3:3: error: expected ',' or '}', found '.limits'");
  EXPECT_EQ(project_refusal(".{ .network = .none, .network = .host }"),
            "/p/chock.zon:1:22: error: duplicate field '.network' (first at 1:4)");
}

TEST(ConfigOperator, LimitsOnly) {
  auto op = parse_operator(".{ .limits = .{ .memory = \"8GiB\", .processes = \"25%\" } }", "/h/config.zon");
  ASSERT_TRUE(op) << op.error().message();
  EXPECT_EQ(op->path, "/h/config.zon");
  EXPECT_EQ(op->limits.memory->value, 8 * kGiB);
  EXPECT_EQ(op->limits.processes->value, 25u);
  EXPECT_EQ(op->limits.processes->origin, "/h/config.zon:1:48");
  auto policy = parse_operator(".{ .policy = .{} }", "/h/config.zon");
  ASSERT_FALSE(policy);
  EXPECT_EQ(
      policy.error().message(),
      "/h/config.zon:1:4: error: unknown key '.policy' in the operator's config.zon; the keys there are "
      ".limits, .toolchain_paths, .allow_private, .bases_max_size and .link_base_index");
}

TEST(ConfigOperator, LinkBaseIndexIsABooleanOffByDefault) {
  auto none = parse_operator(".{}", "/h/config.zon");
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(none->link_base_index);
  auto on = parse_operator(".{ .link_base_index = true }", "/h/config.zon");
  ASSERT_TRUE(on) << on.error().message();
  EXPECT_TRUE(on->link_base_index);
  auto number = parse_operator(".{ .link_base_index = 1 }", "/h/config.zon");
  ASSERT_FALSE(number);
  EXPECT_EQ(number.error().message(), "/h/config.zon:1:23: error: expected a boolean, found an integer");
}

TEST(ConfigOperator, BasesMaxSizeIsASizeOfAtLeastOneMiB) {
  auto none = parse_operator(".{}", "/h/config.zon");
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_FALSE(none->bases_max_bytes);
  auto op = parse_operator(".{ .bases_max_size = \"20GiB\" }", "/h/config.zon");
  ASSERT_TRUE(op) << op.error().message();
  EXPECT_EQ(op->bases_max_bytes, 20 * kGiB);
  auto words = parse_operator(".{ .bases_max_size = \"lots\" }", "/h/config.zon");
  ASSERT_FALSE(words);
  EXPECT_EQ(words.error().message(), "/h/config.zon:1:22: error: bases_max_size lots: expected a number");
  auto tiny = parse_operator(".{ .bases_max_size = \"512KiB\" }", "/h/config.zon");
  ASSERT_FALSE(tiny);
  EXPECT_NE(tiny.error().message().find("bases_max_size below 1MiB would keep no shared base"),
            std::string::npos)
      << tiny.error().message();
  auto number = parse_operator(".{ .bases_max_size = 1000000000 }", "/h/config.zon");
  ASSERT_FALSE(number);
  EXPECT_NE(number.error().message().find("expected a size such as \"10GiB\""), std::string::npos)
      << number.error().message();
}

TEST(ConfigBundle, PolicyLimitsAndDenyRead) {
  auto b = parse_bundle(
      ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .deny } } },\n"
      "   .limits = .{ .memory = \"4GiB\" }, .deny_read = .{ \".npmrc\" } }",
      "/etc/chock/bundle.zon");
  ASSERT_TRUE(b) << b.error().message();
  ASSERT_EQ(b->rules.size(), 1u);
  EXPECT_EQ(b->rules[0].decision, policy::Decision::deny);
  EXPECT_EQ(b->rules[0].origin, "/etc/chock/bundle.zon:1:29");
  EXPECT_EQ(b->limits.memory->value, 4 * kGiB);
  EXPECT_EQ(b->deny_read, std::vector<std::string>{".npmrc"});
  auto network = parse_bundle(".{ .network = .host }", "/b.zon");
  ASSERT_FALSE(network);
  EXPECT_EQ(
      network.error().message(),
      "/b.zon:1:4: error: unknown key '.network' in the organisation bundle; the keys there are .policy, "
      ".limits and .deny_read");
  auto bad_entry = parse_bundle(".{ .deny_read = .{ \"../x\" } }", "/b.zon");
  ASSERT_FALSE(bad_entry);
  EXPECT_EQ(bad_entry.error().message(),
            "/b.zon:1:20: error: \"../x\" has a '..' component; write the path without it");
}

TEST(ConfigFiles, ProjectFile) {
  TempDir project;
  ASSERT_FALSE(project.path().empty());
  auto none = read_project(project.path());
  ASSERT_TRUE(none) << none.error().message();
  EXPECT_TRUE(none->path.empty());
  EXPECT_TRUE(none->bytes.empty());

  project.mkdir("build");
  const std::string text = ".{\n    .deny_read = .{ \".env\" },\n    .network = .none,\n}\n";
  const std::string path = project.write("chock.zon", text);
  auto read = read_project(project.path());
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->path, path);
  EXPECT_EQ(read->bytes, text);
  EXPECT_EQ(read->deny_read, std::vector<std::string>{".env"});
  EXPECT_EQ(read->network, Network::none);

  project.write("chock.zon", ".{\n    .deny_read = .{ \".env\", \"build\" },\n}\n");
  auto dir_entry = read_project(project.path());
  ASSERT_FALSE(dir_entry);
  EXPECT_EQ(dir_entry.error().message(),
            path + ":2:29: error: \"build\" is a directory in the project; deny_read takes files");
}

TEST(ConfigFiles, AProjectFileOver64KiB) {
  TempDir project;
  ASSERT_FALSE(project.path().empty());
  std::string text;
  while (text.size() < 65 * 1024) text += "//" + std::string(97, 'x') + "\n";
  const std::string path = project.write("chock.zon", text);
  auto read = read_project(project.path());
  ASSERT_FALSE(read);
  EXPECT_EQ(read.error().message(),
            path + ":656:37: error: the file is longer than 65536 bytes (64 KiB), the most Chock reads");
}

TEST(ConfigFiles, NotARegularFile) {
  TempDir project;
  ASSERT_FALSE(project.path().empty());
  project.mkdir("chock.zon");
  auto dir = read_project(project.path());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.error().message(), "read the project's chock.zon (not a regular file): " + project.path() +
                                       "/chock.zon: EISDIR (Is a directory)");
  TempDir other;
  ASSERT_FALSE(other.path().empty());
  // A FIFO is refused, and opening it does not wait for a writer.
  ASSERT_EQ(::mkfifo((other.path() + "/chock.zon").c_str(), 0600), 0);
  auto fifo = read_project(other.path());
  ASSERT_FALSE(fifo);
  EXPECT_EQ(fifo.error().message(),
            "read the project's chock.zon (not a regular file): " + other.path() + "/chock.zon");
}

// Sets environment variables for one test and puts them back.
class EnvGuard {
 public:
  explicit EnvGuard(std::vector<std::string> names) : names_(std::move(names)) {
    for (const auto& n : names_) {
      const char* v = std::getenv(n.c_str());
      saved_.push_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    }
  }
  ~EnvGuard() {
    for (std::size_t i = 0; i < names_.size(); ++i) {
      if (saved_[i])
        ::setenv(names_[i].c_str(), saved_[i]->c_str(), 1);
      else
        ::unsetenv(names_[i].c_str());
    }
  }
  EnvGuard(const EnvGuard&) = delete;
  EnvGuard& operator=(const EnvGuard&) = delete;

 private:
  std::vector<std::string> names_;
  std::vector<std::optional<std::string>> saved_;
};

TEST(ConfigFiles, OperatorFileFromXdgOrHome) {
  EnvGuard env({"XDG_CONFIG_HOME", "HOME"});
  TempDir xdg, home;
  ASSERT_FALSE(xdg.path().empty());
  ASSERT_FALSE(home.path().empty());
  const std::string xdg_file = xdg.write("chock/config.zon", ".{ .limits = .{ .processes = 64 } }");
  const std::string home_file =
      home.write(".config/chock/config.zon", ".{ .limits = .{ .memory = \"2GiB\" } }");
  ::setenv("XDG_CONFIG_HOME", xdg.path().c_str(), 1);
  ::setenv("HOME", home.path().c_str(), 1);
  auto from_xdg = read_operator();
  ASSERT_TRUE(from_xdg) << from_xdg.error().message();
  EXPECT_EQ(from_xdg->path, xdg_file);
  EXPECT_EQ(from_xdg->limits.processes->value, 64u);

  // A relative XDG_CONFIG_HOME is ignored, as the XDG specification says.
  ::setenv("XDG_CONFIG_HOME", "relative/dir", 1);
  auto from_home = read_operator();
  ASSERT_TRUE(from_home) << from_home.error().message();
  EXPECT_EQ(from_home->path, home_file);
  EXPECT_EQ(from_home->limits.memory->value, 2 * kGiB);

  ::unsetenv("XDG_CONFIG_HOME");
  TempDir empty_home;
  ::setenv("HOME", empty_home.path().c_str(), 1);
  auto absent = read_operator();
  ASSERT_TRUE(absent) << absent.error().message();
  EXPECT_TRUE(absent->path.empty());
  EXPECT_FALSE(absent->limits.memory);

  home.write(".config/chock/config.zon", ".{ .limits = .{ .memory = \"2GiB\" }, .network = .host }");
  ::setenv("HOME", home.path().c_str(), 1);
  auto bad = read_operator();
  ASSERT_FALSE(bad);
  EXPECT_EQ(
      bad.error().message(),
      home_file +
          ":1:37: error: unknown key '.network' in the operator's config.zon; the keys there are .limits, "
          ".toolchain_paths, .allow_private, .bases_max_size and .link_base_index");
}

TEST(ConfigFiles, BundleFile) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  const std::string missing = dir.path() + "/none.zon";
  auto absent = read_bundle(missing);
  ASSERT_FALSE(absent);
  EXPECT_EQ(absent.error().path, missing);
  EXPECT_EQ(absent.error().code, ENOENT);
  const std::string path = dir.write("bundle.zon", ".{ .limits = .{ .processes = 100 } }");
  auto read = read_bundle(path);
  ASSERT_TRUE(read) << read.error().message();
  EXPECT_EQ(read->path, path);
  EXPECT_EQ(read->limits.processes->value, 100u);
  // No path: the machine's own bundle, when it has one.
  auto machine = read_bundle("");
  if (::access("/etc/chock/bundle.zon", F_OK) != 0) {
    ASSERT_TRUE(machine) << machine.error().message();
    EXPECT_TRUE(machine->path.empty());
  } else if (machine) {
    EXPECT_EQ(machine->path, "/etc/chock/bundle.zon");
  }
}

LimitValue bytes(std::uint64_t n) {
  return LimitValue{LimitValue::Kind::absolute, n, "test"};
}
LimitValue count(std::uint64_t n) {
  return LimitValue{LimitValue::Kind::absolute, n, "test"};
}
LimitValue share(std::uint64_t percent) {
  return LimitValue{LimitValue::Kind::percent, percent, "test"};
}
LimitsSpec memory(std::optional<LimitValue> v) {
  return LimitsSpec{std::nullopt, std::move(v)};
}
LimitsSpec processes(std::optional<LimitValue> v) {
  return LimitsSpec{std::move(v), std::nullopt};
}

const Machine kMachine{4, 16 * kGiB};

TEST(Ratchet, ProjectAboveOperatorIsHeldWithANotice) {
  auto e = ratchet(memory(bytes(8 * kGiB)), memory(bytes(4 * kGiB)), {}, kMachine);
  EXPECT_EQ(e.memory_bytes, 4 * kGiB);
  EXPECT_EQ(e.notices, std::vector<std::string>{
                           "the project asks for memory 8 GiB; the operator's config.zon holds it to 4 GiB"});
  EXPECT_FALSE(e.processes);
}

TEST(Ratchet, BundleCeilingHeldWithExactlyOneNotice) {
  auto e = ratchet(memory(bytes(8 * kGiB)), {}, memory(bytes(4 * kGiB)), kMachine);
  EXPECT_EQ(e.memory_bytes, 4 * kGiB);
  EXPECT_EQ(e.notices, std::vector<std::string>{
                           "the project asks for memory 8 GiB; the organisation bundle holds it to 4 GiB"});
  // Above both: one notice, naming the layer whose value is used.
  auto both = ratchet(memory(bytes(16 * kGiB)), memory(bytes(8 * kGiB)), memory(bytes(4 * kGiB)), kMachine);
  EXPECT_EQ(both.memory_bytes, 4 * kGiB);
  EXPECT_EQ(both.notices,
            std::vector<std::string>{
                "the project asks for memory 16 GiB; the organisation bundle holds it to 4 GiB"});
  // The operator's own value, held by the bundle.
  auto op = ratchet({}, processes(count(512)), processes(count(100)), kMachine);
  EXPECT_EQ(op.processes, 100u);
  EXPECT_EQ(op.notices,
            std::vector<std::string>{
                "the operator's config.zon asks for processes 512; the organisation bundle holds it to 100"});
}

TEST(Ratchet, ProjectLowerThanBothWins) {
  LimitsSpec project{count(32), bytes(1 * kGiB)};
  LimitsSpec op{count(256), bytes(4 * kGiB)};
  LimitsSpec bundle{count(1024), bytes(8 * kGiB)};
  auto e = ratchet(project, op, bundle, kMachine);
  EXPECT_EQ(e.processes, 32u);
  EXPECT_EQ(e.memory_bytes, 1 * kGiB);
  EXPECT_TRUE(e.notices.empty());
  // Equal to the ceiling is not held.
  auto equal = ratchet(memory(bytes(4 * kGiB)), {}, memory(bytes(4 * kGiB)), kMachine);
  EXPECT_EQ(equal.memory_bytes, 4 * kGiB);
  EXPECT_TRUE(equal.notices.empty());
}

TEST(Ratchet, OperatorWhenTheProjectIsSilentAndNothingWhenNobodySpeaks) {
  auto op = ratchet({}, memory(bytes(3 * kGiB)), {}, kMachine);
  EXPECT_EQ(op.memory_bytes, 3 * kGiB);
  EXPECT_TRUE(op.notices.empty());
  auto nobody = ratchet({}, {}, {}, kMachine);
  EXPECT_FALSE(nobody.processes);
  EXPECT_FALSE(nobody.memory_bytes);
  EXPECT_TRUE(nobody.notices.empty());
}

TEST(Ratchet, ABundleCeilingNeverRaisesADefault) {
  // processes default 256: a ceiling above it changes nothing, one below it holds.
  EXPECT_FALSE(ratchet({}, {}, processes(count(1024)), kMachine).processes);
  EXPECT_EQ(ratchet({}, {}, processes(count(64)), kMachine).processes, 64u);
  // memory defaults to 2 GiB (memory.max, or Chock's measurement).
  EXPECT_EQ(ratchet({}, {}, memory(bytes(1 * kGiB)), kMachine).memory_bytes, 1 * kGiB);
  EXPECT_FALSE(ratchet({}, {}, memory(bytes(8 * kGiB)), kMachine).memory_bytes);
  EXPECT_TRUE(ratchet({}, {}, memory(bytes(1 * kGiB)), kMachine).notices.empty());
}

TEST(Ratchet, SharesResolveAgainstTheMachine) {
  // 4 CPUs: a budget of 1024 processes; 16 GiB of RAM.
  auto e = ratchet(LimitsSpec{share(50), share(25)}, {}, {}, kMachine);
  EXPECT_EQ(e.processes, 512u);
  EXPECT_EQ(e.memory_bytes, 4 * kGiB);
  EXPECT_TRUE(e.notices.empty());
  // A share in the bundle or the operator's file resolves before comparing.
  auto held = ratchet(memory(bytes(4 * kGiB)), {}, memory(share(10)), kMachine);
  EXPECT_EQ(held.memory_bytes, 16 * kGiB / 10);
  EXPECT_EQ(held.notices,
            std::vector<std::string>{
                "the project asks for memory 4 GiB; the organisation bundle holds it to 10% (1.6 GiB)"});
  auto op = ratchet(processes(count(300)), processes(share(25)), {}, kMachine);
  EXPECT_EQ(op.processes, 256u);
  EXPECT_EQ(op.notices,
            std::vector<std::string>{
                "the project asks for processes 300; the operator's config.zon holds it to 25% (256)"});
  auto project_share = ratchet(memory(share(75)), {}, memory(bytes(8 * kGiB)), kMachine);
  EXPECT_EQ(project_share.memory_bytes, 8 * kGiB);
  EXPECT_EQ(project_share.notices,
            std::vector<std::string>{
                "the project asks for memory 75% (12 GiB); the organisation bundle holds it to 8 GiB"});
  // A share below the ceiling is not held, however it was written.
  EXPECT_TRUE(ratchet(memory(share(10)), {}, memory(bytes(8 * kGiB)), kMachine).notices.empty());
}

TEST(Ratchet, ShareArithmetic) {
  EXPECT_EQ(resolve_memory(share(33), Machine{1, 1000}), 330u);
  EXPECT_EQ(resolve_memory(share(100), Machine{1, ~0ULL}), ~0ULL);
  EXPECT_EQ(resolve_memory(share(50), Machine{1, ~0ULL}), ~0ULL / 2);
  EXPECT_EQ(resolve_memory(share(1), Machine{1, 0}), 1u);  // never 0
  EXPECT_EQ(resolve_memory(bytes(5 * kMiB), Machine{1, 0}), 5 * kMiB);
  EXPECT_EQ(resolve_processes(share(100), Machine{8, 0}), 8 * kProcessesPerCpu);
  EXPECT_EQ(resolve_processes(share(1), Machine{1, 0}), 2u);
  EXPECT_EQ(resolve_processes(share(50), Machine{0, 0}), 128u);  // no CPU count: one
}

TEST(Ratchet, FromParsedFiles) {
  auto project =
      parse_project(".{ .limits = .{ .processes = \"100%\", .memory = \"8GiB\" } }", kPath, "/nonexistent");
  auto op = parse_operator(".{ .limits = .{ .processes = 256 } }", "/h/config.zon");
  auto bundle = parse_bundle(".{ .limits = .{ .memory = \"25%\" } }", "/etc/chock/bundle.zon");
  ASSERT_TRUE(project && op && bundle);
  auto e = ratchet(project->limits, op->limits, bundle->limits, Machine{2, 8 * kGiB});
  EXPECT_EQ(e.processes, 256u);
  EXPECT_EQ(e.memory_bytes, 2 * kGiB);
  EXPECT_EQ(e.notices,
            (std::vector<std::string>{
                "the project asks for processes 100% (512); the operator's config.zon holds it to 256",
                "the project asks for memory 8 GiB; the organisation bundle holds it to 25% (2 GiB)"}));
}

TEST(ConfigMachine, ThisMachine) {
  const Machine m = this_machine();
  EXPECT_EQ(m.cpus, static_cast<std::uint64_t>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // /proc/meminfo says the same in KiB, rounded down.
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key) {
    if (key == "MemTotal:") {
      meminfo >> kib;
      break;
    }
  }
  ASSERT_GT(kib, 0u);
  EXPECT_EQ(m.ram_bytes / 1024, kib);
}

TEST(DiskLimit, ReadAsASizeDefaultsToTenGiBAndAProjectOnlyLowersIt) {
  auto p = parse_project(".{ .limits = .{ .disk = \"512MiB\" } }", "/p/chock.zon", "/nonexistent");
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->limits.disk);
  EXPECT_EQ(p->limits.disk->value, 512ULL << 20);
  for (const char* bad : {"512", "\"50%\"", "\"10GB\"", "\"512KiB\""}) {
    auto q =
        parse_project(std::string(".{ .limits = .{ .disk = ") + bad + " } }", "/p/chock.zon", "/nonexistent");
    ASSERT_FALSE(q) << bad;
    EXPECT_EQ(q.error().message().rfind("/p/chock.zon:1:", 0), 0U) << q.error().message();
  }
  const chock::config::Machine machine{4, 1ULL << 34};
  EXPECT_EQ(ratchet({}, {}, {}, machine).disk_bytes, 10ULL << 30);
  LimitsSpec lower;
  lower.disk = LimitValue{LimitValue::Kind::absolute, 1ULL << 30, "p:1:1"};
  EXPECT_EQ(ratchet(lower, {}, {}, machine).disk_bytes, 1ULL << 30);
  LimitsSpec higher;
  higher.disk = LimitValue{LimitValue::Kind::absolute, 100ULL << 30, "p:1:1"};
  auto held = ratchet(higher, {}, {}, machine);
  EXPECT_EQ(held.disk_bytes, 10ULL << 30);
  EXPECT_EQ(held.notices.size(), 1U);
}

TEST(CacheLimit, ReadAsASizeDefaultsToTwoGiBAndAProjectOnlyLowersIt) {
  auto p = parse_project(".{ .limits = .{ .cache = \"256MiB\" } }", "/p/chock.zon", "/nonexistent");
  ASSERT_TRUE(p) << p.error().message();
  ASSERT_TRUE(p->limits.cache);
  EXPECT_EQ(p->limits.cache->value, 256ULL << 20);
  for (const char* bad : {"512", "\"50%\"", "\"2GB\"", "\"512KiB\""}) {
    auto q = parse_project(std::string(".{ .limits = .{ .cache = ") + bad + " } }", "/p/chock.zon",
                           "/nonexistent");
    ASSERT_FALSE(q) << bad;
    EXPECT_EQ(q.error().message().rfind("/p/chock.zon:1:", 0), 0U) << q.error().message();
  }
  const chock::config::Machine machine{4, 1ULL << 34};
  EXPECT_EQ(ratchet({}, {}, {}, machine).cache_bytes, 2ULL << 30);
  LimitsSpec lower;
  lower.cache = LimitValue{LimitValue::Kind::absolute, 1ULL << 30, "p:1:1"};
  EXPECT_EQ(ratchet(lower, {}, {}, machine).cache_bytes, 1ULL << 30);
  LimitsSpec higher;
  higher.cache = LimitValue{LimitValue::Kind::absolute, 100ULL << 30, "p:1:1"};
  auto held = ratchet(higher, {}, {}, machine);
  EXPECT_EQ(held.cache_bytes, 2ULL << 30);
  EXPECT_EQ(held.notices.size(), 1U);
}

}  // namespace

namespace {

using chock::config::kDefaultTimeoutSeconds;
using chock::config::LimitsSpec;
using chock::config::LimitValue;
using chock::config::parse_project;
using chock::config::ratchet;

LimitsSpec timeout_of(std::uint64_t seconds) {
  LimitsSpec l;
  l.timeout = LimitValue{LimitValue::Kind::absolute, seconds, "test"};
  return l;
}

TEST(Timeout, ReadAsSecondsOrADuration) {
  for (const auto& [text, seconds] : std::vector<std::pair<std::string, std::uint64_t>>{
           {"600", 600}, {"\"90s\"", 90}, {"\"10m\"", 600}, {"\"2h\"", 7200}}) {
    auto p = parse_project(".{ .limits = .{ .timeout = " + text + " } }", "/p/chock.zon", "/nonexistent");
    ASSERT_TRUE(p) << text << ": " << p.error().message();
    ASSERT_TRUE(p->limits.timeout) << text;
    EXPECT_EQ(p->limits.timeout->value, seconds) << text;
  }
  for (const char* bad : {"0", "\"10\"", "\"5d\"", "\"m\"", "\"-1m\"", "true", "\"200h\""}) {
    auto p = parse_project(std::string(".{ .limits = .{ .timeout = ") + bad + " } }", "/p/chock.zon",
                           "/nonexistent");
    ASSERT_FALSE(p) << bad;
    EXPECT_EQ(p.error().message().rfind("/p/chock.zon:1:", 0), 0U) << p.error().message();
  }
}

TEST(Timeout, DefaultsToHalfAnHourAndAProjectOnlyLowersIt) {
  const chock::config::Machine machine{4, 1ULL << 34};
  EXPECT_EQ(kDefaultTimeoutSeconds, 1800U);
  EXPECT_EQ(ratchet({}, {}, {}, machine).timeout_seconds, 1800U);
  EXPECT_EQ(ratchet(timeout_of(60), {}, {}, machine).timeout_seconds, 60U);
  auto raised = ratchet(timeout_of(7200), {}, {}, machine);
  EXPECT_EQ(raised.timeout_seconds, 1800U);
  EXPECT_EQ(raised.notices, std::vector<std::string>{
                                "the project asks for timeout 7200 s; Chock's default holds it to 1800 s"});
  // The operator may raise the default; the project still lowers only.
  EXPECT_EQ(ratchet({}, timeout_of(7200), {}, machine).timeout_seconds, 7200U);
  EXPECT_EQ(ratchet(timeout_of(9000), timeout_of(7200), {}, machine).timeout_seconds, 7200U);
  // The bundle's ceiling holds everyone, the default included.
  EXPECT_EQ(ratchet({}, {}, timeout_of(600), machine).timeout_seconds, 600U);
}

}  // namespace

TEST(ConfigFiles, OnlyTheOperatorOpensAPrivateRangeAndOnlyAPrivateOne) {
  auto ok =
      chock::config::parse_operator(".{ .allow_private = .{ \"10.20.0.0/16\", \"fd12::/16\" } }", "op.zon");
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->allow_private, (std::vector<std::string>{"10.20.0.0/16", "fd12::/16"}));
  for (const char* wide : {"169.254.0.0/16", "127.0.0.0/8", "8.8.8.0/24", "10.0.0.0/7"}) {
    auto bad =
        chock::config::parse_operator(std::string(".{ .allow_private = .{ \"") + wide + "\" } }", "op.zon");
    ASSERT_FALSE(bad) << wide;
    EXPECT_NE(bad.error().message().find("op.zon:1:"), std::string::npos) << bad.error().message();
  }
  auto project = chock::config::parse_project(".{ .allow_private = .{ \"10.20.0.0/16\" } }", "chock.zon", "");
  ASSERT_FALSE(project);
  EXPECT_NE(project.error().message().find(".allow_private is the operator's"), std::string::npos);
}
