// The rows of a filtered call's network, tried for real: a call with
// Network::filtered is made (its routes, its nftables ruleset, its sockets,
// its /etc overlay) and asks its resolver for a name the probe's judge
// refuses, so the answer proves the stub is served from outside the call.
#include <string>

#include "chock/net.hpp"
#include "chock/sandbox.hpp"
#include "doctor/probes.hpp"
#include "sandbox/etc_overlay.hpp"

namespace chock::doctor {

namespace {

constexpr const char* kProbeName = "doctor-probe.chock.invalid";

// "/etc/hostname, /etc/hosts and /etc/resolv.conf"
std::string listed(const std::vector<std::string>& paths) {
  std::string out;
  for (std::size_t i = 0; i < paths.size(); ++i)
    out += (i == 0 ? "" : i + 1 == paths.size() ? " and " : ", ") + paths[i];
  return out;
}

}  // namespace

std::vector<Row> filtered_network_rows() {
  Config c;
  c.argv = {"/bin/sh", "-c", std::string("getent hosts ") + kProbeName + " >/dev/null 2>&1; exit 0"};
  c.env = std::vector<std::string>{"PATH=/usr/bin:/bin"};
  c.network = Network::filtered;
  c.timeout = std::chrono::seconds(10);
  c.judge = std::make_shared<net::Judge>([](const std::string& action) {
    return net::Ruling{false, "deny", "chock doctor", action + " is refused by chock doctor's probe"};
  });
  Row filtered = make_row("filtered network", Level::ok, false, "");
  // A container's files mounted in /etc cannot be under an overlay: named in
  // the row, whichever way the call went.
  const std::vector<std::string> below = sandbox::mounts_below_etc();
  const std::string mounts =
      below.empty() ? "" : "the host mounts " + listed(below) + " in /etc, which an overlay cannot take";
  Row files =
      make_row("resolver files", Level::ok, false,
               below.empty() ? "a filtered call's /etc is an overlay: Chock's resolv.conf (nameserver "
                               "127.0.0.53), hosts and nsswitch.conf over the host's /etc, nothing "
                               "written to the host"
                             : mounts +
                                   ": a filtered call's /etc is a tmpfs of Chock's with its resolv.conf "
                                   "(nameserver 127.0.0.53), hosts and nsswitch.conf and the host's other "
                                   "entries bound in, nothing written to the host");
  auto r = run(c);
  if (!r) {
    filtered = make_row("filtered network", Level::off, false,
                        "the probe call could not start: " + r.error().message());
    files.level = Level::off;
    files.state = level_name(Level::off);
    files.reason = "not tried: " + filtered.reason;
    return {filtered, files};
  }
  if (r->setup_failure) {
    const auto& f = *r->setup_failure;
    const std::string step =
        f.step + ": " + errno_name(f.code) + (f.detail.empty() ? "" : " (" + f.detail + ")");
    if (f.detail.rfind("/etc", 0) == 0) {
      files = make_row("resolver files", Level::off, false,
                       (below.empty() ? "rootless overlayfs over /etc failed (" + step + ")"
                                      : "a filtered call's /etc failed (" + step + "; " + mounts + ")") +
                           ": a filtered call refuses on this machine");
      filtered = make_row("filtered network", Level::off, false, "needs the resolver files row");
    } else {
      filtered =
          make_row("filtered network", Level::off, false,
                   "the call's network could not be set up (" + step + "): a filtered call refuses here");
      files.reason = "not tried: " + filtered.reason;
      files.level = Level::off;
      files.state = level_name(Level::off);
    }
    return {filtered, files};
  }
  bool answered = false;
  for (const auto& line : r->network_refusals) answered |= line.find(kProbeName) != std::string::npos;
  if (answered)
    filtered.reason =
        "a call's own routes, nftables ruleset, resolver (127.0.0.53) and relay were set up, and its "
        "resolver "
        "was answered from outside the call";
  else
    filtered =
        make_row("filtered network", Level::degraded, false,
                 "the call was set up but its resolver's answer was not seen (getent missing in /usr/bin?)");
  return {filtered, files};
}

}  // namespace chock::doctor
