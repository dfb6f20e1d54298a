// A project with a page, served on the call's own loopback by Python's
// http.server, and the programs Debian ships to open it.
#pragma once

#include <unistd.h>

#include <string>
#include <vector>

#include "support.hpp"

namespace chock::test::programs {

// The page: a paragraph its script fills at load, and a button whose click
// rewrites another.
inline constexpr const char* kPage =
    "<!doctype html><html><body>"
    "<p id=\"loaded\">not run</p><p id=\"out\">before</p>"
    "<button id=\"go\" onclick=\"document.getElementById('out').textContent='clicked inside "
    "chock'\">go</button>"
    "<script>document.getElementById('loaded').textContent='script ran on ' + location.host</script>"
    "</body></html>\n";

inline constexpr const char* kUrl = "http://127.0.0.1:8347/index.html";

// The path of a program Debian installs in /usr/bin, or "" with `why` set.
inline std::string program(const std::string& name, std::string* why) {
  const std::string path = "/usr/bin/" + name;
  if (::access(path.c_str(), X_OK) == 0) return path;
  *why = path + " is not installed (scripts/install-deps installs it)";
  return {};
}

// The driver clients (npm ci in tests/programs/clients), or "" with `why` set.
inline std::string clients(std::string* why) {
  const std::string dir = CHOCK_PROGRAM_CLIENTS;
  if (::access((dir + "/node_modules/@playwright/test/package.json").c_str(), R_OK) == 0 &&
      ::access((dir + "/node_modules/puppeteer-core/package.json").c_str(), R_OK) == 0)
    return dir;
  *why = "the browser drivers are not installed in " + dir + " (scripts/install-deps runs npm ci there)";
  return {};
}

// The drivers copied into the project as `drivers/` (their scripts and
// node_modules): a call sees the project and the system's read-only tree,
// not the checkout the tests run from. "" with `why` set on failure.
inline std::string add_drivers(const ws::Fixture& f, std::string* why) {
  const std::string dir = clients(why);
  if (dir.empty()) return {};
  Output o = run_process({"sh", "-c", "mkdir -p \"$2\" && cp -R \"$1\"/node_modules \"$1\"/*.cjs \"$2\"/",
                          "sh", dir, f.file("drivers")});
  if (o.status != 0) {
    *why = "copying the drivers into the project failed: " + o.err;
    return {};
  }
  return "drivers";
}

// A shell script: serve the project on the call's own 127.0.0.1:8347, wait
// until it answers (bounded), run `command`, keep its status, stop the server.
inline std::string served(const std::string& command) {
  return "python3 -m http.server 8347 --bind 127.0.0.1 >/dev/null 2>&1 & server=$!\n"
         "i=0; until python3 -c 'import urllib.request as u; u.urlopen(\"" +
         std::string(kUrl) +
         "\", timeout=2)' 2>/dev/null; do i=$((i+1)); [ $i -lt 100 ] || exit 90; sleep 0.1; done\n" +
         command + "\nstatus=$?\nkill $server\nexit $status\n";
}

// `chock run FLAGS -- sh -c SCRIPT` from the fixture's project, given
// `seconds` (a browser starts slowly on a loaded machine).
inline Output run_long(const ws::Fixture& f, const std::vector<std::string>& flags, const std::string& script,
                       int seconds = 240) {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  RunOptions o = f.options();
  o.timeout = std::chrono::seconds(seconds);
  return chock(args, o);
}

// The page in a plain project, and chock.zon allowing the JIT when asked
// (V8 and SpiderMonkey need it).
inline void project_with_page(ws::Fixture& f, bool allow_jit) {
  f.init_plain();
  write_file(f.file("index.html"), kPage);
  if (allow_jit)
    write_file(f.file("chock.zon"),
               ".{ .policy = .{ .rules = .{ .{ .action = \"sandbox.jit\", .decision = .allow } } } }\n");
}

}  // namespace chock::test::programs
