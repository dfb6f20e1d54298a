// chock credentials set HOST [--port N] [--header NAME] [--format F] [--env VAR]
// | list | remove HOST: the secrets the host side adds to a request to
// exactly that host (net/credentials.hpp). A secret is read from stdin, never
// from the command line (which every process of the machine can read), and
// is never printed.
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "cli/command.hpp"
#include "net/credentials.hpp"
#include "util/escape.hpp"

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

int set(const std::string& text, const net::CredentialSpec& spec) {
  auto host = host_of(text);
  if (!host) return fail(host.error());
  const std::string secret = read_secret();
  auto stored = net::set_credential(*host, secret, spec);
  if (!stored) return fail(stored.error());
  const std::string where =
      stored->port == 443 ? stored->host : stored->host + ":" + std::to_string(stored->port);
  std::printf("chock: a credential for %s is stored (%s: %s); chock fetch sends it to https://%s only\n",
              where.c_str(), stored->header.c_str(), stored->format.c_str(), where.c_str());
  if (!stored->env.empty())
    std::printf("chock: the project's filtered calls see %s as a sentinel of its shape, never the secret\n",
                stored->env.c_str());
  return 0;
}

// One line a credential: where, which header, which variable; never the secret.
int list() {
  auto all = net::credentials();
  if (!all) return fail(all.error());
  for (const auto& c : *all) {
    std::string line = c.port == 443 ? c.host : c.host + ":" + std::to_string(c.port);
    line += "  " + c.header + ": " + c.format;
    if (!c.env.empty()) line += "  env " + c.env;
    std::printf("%s\n", printable(line).c_str());
  }
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

void add_credentials_command(Command app, Action& action) {
  auto host = std::make_shared<std::string>();
  Command cmd = app.add_subcommand(
      "credentials", "Secrets chock fetch adds for exactly one host (https only); no call ever holds them");
  cmd.require_subcommand(1);
  Command s = cmd.add_subcommand("set", "Store HOST's secret, read from stdin");
  s.add_option("host", *host, "The host, e.g. api.example.org").required();
  auto spec = std::make_shared<net::CredentialSpec>();
  s.add_option("--port", spec->port, "The port it is for (default 443)").check(Check::range(1, 65535));
  s.add_option("--header", spec->header, "The header that carries it (default Authorization)");
  s.add_option(
      "--format", spec->format,
      "The header's value, the secret at {} (default 'Bearer {}' for a bare token in Authorization)");
  s.add_option("--env", spec->env,
               "A variable the project's filtered calls see holding a sentinel in its place (e.g. "
               "ANTHROPIC_API_KEY)");
  s.callback([host, spec, &action] { action = [host, spec] { return set(*host, *spec); }; });
  Command l = cmd.add_subcommand("list", "The hosts with a secret (never the secrets)");
  l.callback([&action] { action = [] { return list(); }; });
  Command r = cmd.add_subcommand("remove", "Forget HOST's secret");
  r.add_option("host", *host, "The host").required();
  r.callback([host, &action] { action = [host] { return remove(*host); }; });
}

}  // namespace chock::cli
