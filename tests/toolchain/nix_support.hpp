// The Nix toolchain tests' fixture (nix_toolchain_test.cpp,
// nix_allow_test.cpp): a project, the tests' own store paths (bash-static
// and busybox added with nix-store --add), and Nix behind a wrapper that
// counts its runs. Every run has NIX_CONFIG="substituters =" so Nix never
// asks a binary cache.
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support.hpp"

namespace chock::test::ws {

inline constexpr const char* kBashStatic = "/bin/bash-static";
inline constexpr const char* kBusybox = "/bin/busybox";
inline constexpr const char* kDaemonSocket = "/nix/var/nix/daemon-socket/socket";

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

inline std::string which(const std::string& name) {
  for (const char* dir : {"/usr/local/bin", "/usr/bin", "/bin"}) {
    const std::string p = std::string(dir) + "/" + name;
    if (::access(p.c_str(), X_OK) == 0) return p;
  }
  return {};
}

// Root may use the store directly; anyone else needs the daemon.
inline std::string why_no_nix() {
  if (which("nix").empty() || which("nix-store").empty()) return "Nix is not installed (apt install nix-bin)";
  if (::access(kBashStatic, X_OK) != 0) return "no /bin/bash-static (apt install bash-static)";
  if (::access(kBusybox, X_OK) != 0) return "no /bin/busybox (apt install busybox-static)";
  if (running_as_root()) return {};
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, kDaemonSocket, sizeof addr.sun_path - 1);
  const bool up = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  const int err = errno;
  ::close(fd);
  if (!up)
    return std::string("no nix-daemon this user can reach at ") + kDaemonSocket + " (" + std::strerror(err) +
           "): start nix-daemon and put the user in the nix-users group";
  return {};
}

class NixToolchain : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = why_no_nix(); !why.empty()) GTEST_SKIP() << why;
    // The tools' store paths: content-addressed, so every run adds the same ones.
    bash_ = add_to_store("chock-test-bash", "bash", kBashStatic);
    busybox_ = add_to_store("chock-test-busybox", "busybox", kBusybox);
    ASSERT_TRUE(is_store(bash_) && is_store(busybox_)) << bash_ << " " << busybox_;
    // In the store, never named by the shell: it must not be in the call.
    const std::string other = dir_.path() + "/chock-test-outside";
    ASSERT_EQ(::mkdir(other.c_str(), 0755), 0);
    write_file(other + "/marker", "not in any closure\n");
    outside_ = store_add(other);
    ASSERT_TRUE(is_store(outside_)) << outside_;
    // A wrapper that counts Nix's runs, then runs the real one.
    const std::string wrap = dir_.path() + "/wrap";
    ASSERT_EQ(::mkdir(wrap.c_str(), 0755), 0);
    for (const char* tool : {"nix", "nix-store"})
      write_file(wrap + "/" + tool,
                 std::string("#!/bin/sh\necho \"$0 $*\" >> ") + dir_.path() + "/nix-runs\nexec " +
                     which(tool) + " \"$@\"\n",
                 0755);
    path_ = wrap + ":/usr/local/bin:/usr/bin:/bin";
    f.set_env("PATH", path_);  // for f.on_terminal too
    f.set_env("NIX_CONFIG", "substituters =\n");
    f.init_plain();
  }

  std::string store_add(const std::string& path) const {
    auto r = run_process({which("nix-store"), "--add", path});
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out.substr(0, r.out.find('\n'));
  }

  // A directory NAME/bin/PROGRAM holding a copy of `from`, added to the store.
  std::string add_to_store(const std::string& name, const std::string& program,
                           const std::string& from) const {
    const std::string dir = dir_.path() + "/" + name;
    ::mkdir(dir.c_str(), 0755);
    ::mkdir((dir + "/bin").c_str(), 0755);
    std::ifstream in(from, std::ios::binary);
    std::ostringstream bytes;
    bytes << in.rdbuf();
    write_file(dir + "/bin/" + program, bytes.str(), 0755);
    return store_add(dir);
  }

  static bool is_store(const std::string& p) { return p.starts_with("/nix/store/") && p.size() > 11; }

  // shell.nix: a tool built from busybox (hello, sh, ls, env, touch, cat) and
  // a shell whose PATH is the tool's bin. `extra` lands in the file as a comment.
  // `bindings` are added to its `let`, `attributes` to the shell's derivation.
  void write_shell(const std::string& extra = {}, const std::string& bindings = {},
                   const std::string& attributes = {}) const {
    const std::string bb = busybox_ + "/bin/busybox";
    std::string links;
    for (const char* applet : {"sh", "ls", "env", "touch", "cat", "readlink"})
      links += " && " + bb + " ln -s busybox $out/bin/" + applet;
    write_file(
        f.file("shell.nix"),
        "# " + extra + "\nlet\n  bash = builtins.storePath \"" + bash_ + "\";\n" +
            "  busybox = builtins.storePath \"" + busybox_ + "\";\n" +
            "  tool = builtins.derivation {\n    name = \"chock-test-tool\";\n" +
            "    system = builtins.currentSystem;\n    builder = \"${bash}/bin/bash\";\n" +
            "    args = [ \"-c\" \"" + bb + " mkdir -p $out/bin && " + bb + " cp " + bb +
            " $out/bin/busybox && printf '#!%s\\\\necho hello from the dev shell\\\\n' ${bash}/bin/bash > "
            "$out/bin/hello && " +
            bb + " chmod +x $out/bin/hello" + links + "\" ];\n  };\n" + bindings +
            "in builtins.derivation {\n  name = \"chock-test-shell\";\n" +
            "  system = builtins.currentSystem;\n  builder = \"${bash}/bin/bash\";\n" +
            "  args = [ \"-c\" \"echo > $out\" ];\n  outputs = [ \"out\" ];\n" +
            "  PATH = \"${tool}/bin\";\n  GREETING = \"from shell.nix\";\n  HOME = \"/not/this\";\n" +
            attributes + "}\n");
  }

  Output chock(const std::vector<std::string>& args) const {
    RunOptions o = f.options();
    o.env["PATH"] = path_;
    o.env["NIX_CONFIG"] = "substituters =\n";
    o.timeout = std::chrono::seconds(240);
    return test::chock(args, o);
  }

  // `chock toolchain allow`: the person allows the shell's present content.
  void allow() const {
    auto r = chock({"toolchain", "allow"});
    ASSERT_EQ(r.status, 0) << describe(r);
    ASSERT_TRUE(has(r.out, "chock: allowed the Nix dev shell")) << describe(r);
  }

  Output run(const std::string& script, const std::vector<std::string>& flags = {}) const {
    std::vector<std::string> args{"run"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return chock(args);
  }

  int nix_runs() const {
    std::ifstream in(dir_.path() + "/nix-runs");
    return static_cast<int>(
        std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
  }

  // How many times Nix evaluated a dev shell (`nix --version` is no evaluation).
  int evaluations() const {
    std::ifstream in(dir_.path() + "/nix-runs");
    int n = 0;
    for (std::string l; std::getline(in, l);)
      if (has(l, "print-dev-env")) ++n;
    return n;
  }

  // The closure as Nix itself gives it, from the profile Chock keeps.
  std::vector<std::string> closure() const {
    std::vector<std::string> out;
    const std::string dir = f.data() + "/chock/toolchains";
    auto listing = run_process({"sh", "-c", "ls -d " + dir + "/*/*.profile"});
    const std::string profile = listing.out.substr(0, listing.out.find('\n'));
    auto r = run_process({which("nix-store"), "--query", "--requisites", profile});
    std::istringstream lines(r.out);
    for (std::string l; std::getline(lines, l);)
      if (!l.empty()) out.push_back(l.substr(std::string("/nix/store/").size()));
    std::sort(out.begin(), out.end());
    return out;
  }

  TempDir dir_{"chock-nix"};
  Fixture f;
  std::string bash_, busybox_, outside_, path_;
};

}  // namespace chock::test::ws
