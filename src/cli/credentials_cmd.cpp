// chock credentials set HOST | list | remove HOST: the secrets the host side
// adds to a fetch of exactly that host (net/credentials.hpp). A secret is
// read from stdin, never from the command line (which every process of the
// machine can read), and is never printed.
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "net/credentials.hpp"

namespace chock::cli {

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "chock: credentials: %s\n", e.message().c_str());
  return exit_status_for(e, 2);
}

Expected<net::Host> host_of(const std::string& text) {
  auto host = net::parse_host(text);
  if (!host) return Error{host.error().message(), "", 0, Errc::bad_config};
  return host;
}

// One line from stdin; on a terminal, without echo.
std::string read_secret() {
  termios saved{};
  const bool tty = ::isatty(STDIN_FILENO) == 1 && ::tcgetattr(STDIN_FILENO, &saved) == 0;
  if (tty) {
    termios quiet = saved;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    ::tcsetattr(STDIN_FILENO, TCSANOW, &quiet);
    std::fprintf(stderr, "chock: the secret (the Authorization header's value, or a bare token): ");
  }
  std::string line;
  std::getline(std::cin, line);
  if (tty) {
    ::tcsetattr(STDIN_FILENO, TCSANOW, &saved);
    std::fprintf(stderr, "\n");
  }
  return line;
}

int set(const std::string& text) {
  auto host = host_of(text);
  if (!host) return fail(host.error());
  const std::string secret = read_secret();
  if (auto r = net::set_credential(*host, secret); !r) return fail(r.error());
  std::printf("chock: a credential for %s is stored; chock fetch sends it to https://%s only\n",
              host->text.c_str(), host->text.c_str());
  return 0;
}

int list() {
  auto hosts = net::credential_hosts();
  if (!hosts) return fail(hosts.error());
  for (const auto& h : *hosts) std::printf("%s\n", h.c_str());
  return 0;
}

int remove(const std::string& text) {
  auto host = host_of(text);
  if (!host) return fail(host.error());
  auto removed = net::remove_credential(*host);
  if (!removed) return fail(removed.error());
  if (!*removed) {
    std::fprintf(stderr, "chock: credentials: there is no credential for %s\n", host->text.c_str());
    return 1;
  }
  std::printf("chock: the credential for %s is removed\n", host->text.c_str());
  return 0;
}

}  // namespace

void add_credentials_command(CLI::App& app, Action& action) {
  auto host = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "credentials", "Secrets chock fetch adds for exactly one host (https only); no call ever holds them");
  cmd->require_subcommand(1);
  CLI::App* s = cmd->add_subcommand("set", "Store HOST's secret, read from stdin");
  s->add_option("host", *host, "The host, e.g. api.example.org")->required();
  s->callback([host, &action] { action = [host] { return set(*host); }; });
  CLI::App* l = cmd->add_subcommand("list", "The hosts with a secret (never the secrets)");
  l->callback([&action] { action = [] { return list(); }; });
  CLI::App* r = cmd->add_subcommand("remove", "Forget HOST's secret");
  r->add_option("host", *host, "The host")->required();
  r->callback([host, &action] { action = [host] { return remove(*host); }; });
}

}  // namespace chock::cli
