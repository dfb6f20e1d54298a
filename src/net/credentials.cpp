#include "net/credentials.hpp"

#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

namespace chock::net {

namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;
// A sentinel is at least this many random letters and digits: nothing a
// request carries by chance.
constexpr std::size_t kMinSentinelRandom = 16;

Expected<nlohmann::json> load(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return nlohmann::json::object();
    return sys_error("stat", path);
  }
  if (!S_ISREG(st.st_mode)) return Error{"the credential store is not a regular file", path};
  if ((st.st_mode & 077) != 0 || st.st_uid != ::geteuid())
    return Error{
        "the credential store is readable by others or not yours (it must be mode 0600): refusing it", path};
  auto text = fs::read_file_nofollow(path, kMaxFileBytes);
  if (!text) return std::move(text).error();
  auto j = parse_json(*text);
  if (!j) return Error{"the credential store is " + j.error().what, path};
  if (!j->is_object()) return Error{"the credential store is not a JSON object", path};
  return j;
}

Expected<void> save(const std::string& path, const nlohmann::json& j) {
  const std::string dir = path.substr(0, path.rfind('/'));
  if (auto made = fs::make_dirs(dir, 0700); !made) return made;
  return fs::write_file_atomic(path, j.dump(2) + "\n", 0600);
}

bool printable_ascii(std::string_view text) {
  for (char c : text)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

// RFC 9110's token: a header's name.
bool is_token(std::string_view text) {
  if (text.empty() || text.size() > 64) return false;
  for (char c : text)
    if (!std::isalnum(static_cast<unsigned char>(c)) &&
        std::string_view("!#$%&'*+-.^_`|~").find(c) == std::string_view::npos)
      return false;
  return true;
}

// A variable a call may be given: a shell name, and none that Chock sets
// itself or that would change how a program is loaded or found.
bool usable_variable(std::string_view name) {
  if (name.empty() || name.size() > 64 || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  for (std::string_view reserved : {"PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "TERM", "LANG"})
    if (name == reserved) return false;
  return !name.starts_with("LD_") && !name.starts_with("CHOCK_");
}

std::size_t count_of(std::string_view text, std::string_view what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string_view::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

// A host's key in the store: the host, and " PORT" after it past 443 (a
// host has no space; an IPv6 address has colons of its own).
std::string key_of(const std::string& host, std::uint16_t port) {
  return port == 443 ? host : host + " " + std::to_string(port);
}

Credential from_json(const std::string& key, const nlohmann::json& v) {
  Credential c;
  const auto space = key.find(' ');
  c.host = key.substr(0, space);
  if (space != std::string::npos)
    c.port = static_cast<std::uint16_t>(std::strtoul(key.c_str() + space + 1, nullptr, 10));
  if (v.is_string()) {  // a store of the first form: the Authorization header's value
    c.secret = v.get<std::string>();
    return c;
  }
  c.header = v.value("header", c.header);
  c.format = v.value("format", c.format);
  c.secret = v.value("secret", std::string());
  c.env = v.value("env", std::string());
  return c;
}

}  // namespace

Expected<std::string> credentials_path() {
  auto data = workspace::data_dir();
  if (!data) return data;
  return *data + "/credentials.json";
}

std::string Credential::header_value() const {
  std::string out = format;
  if (const auto at = out.find("{}"); at != std::string::npos) out.replace(at, 2, secret);
  return out;
}

Expected<Credential> set_credential(const Host& host, std::string_view secret, const CredentialSpec& spec) {
  auto bad = [&host](const std::string& what) { return Error{what, host.text, 0, Errc::bad_config}; };
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.remove_suffix(1);
  if (secret.empty()) return bad("no secret was given on stdin");
  if (secret.size() > kMaxSecretBytes)
    return bad("the secret is longer than " + std::to_string(kMaxSecretBytes) + " bytes");
  if (!printable_ascii(secret))
    return bad("the secret holds a control or non-ASCII byte (a header value is printable ASCII)");
  Credential c;
  c.host = host.text;
  c.secret = std::string(secret);
  if (spec.port != 0) c.port = spec.port;
  if (!spec.header.empty()) {
    if (!is_token(spec.header)) return bad("--header " + spec.header + " is not a header's name");
    c.header = spec.header;
  }
  const bool authorization = c.header.size() == 13 && strncasecmp(c.header.c_str(), "Authorization", 13) == 0;
  if (!spec.format.empty()) {
    if (count_of(spec.format, "{}") != 1 || !printable_ascii(spec.format))
      return bad("--format must hold the secret's place, {}, once, in printable ASCII");
    c.format = spec.format;
  } else if (authorization && secret.find(' ') == std::string_view::npos) {
    c.format = "Bearer {}";  // a bare token
  }
  if (!spec.env.empty()) {
    if (!usable_variable(spec.env))
      return bad("--env " + spec.env +
                 " is not a variable a call may be given (a name of letters, digits "
                 "and _, not PATH, HOME, LD_* or CHOCK_*)");
    if (auto sentinel = make_sentinel(secret); !sentinel) return bad(sentinel.error().what);
    c.env = spec.env;
  }
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  nlohmann::json entry = {{"header", c.header}, {"format", c.format}, {"secret", c.secret}};
  if (!c.env.empty()) entry["env"] = c.env;
  (*j)[key_of(c.host, c.port)] = entry;
  if (auto saved = save(*path, *j); !saved) return std::move(saved).error();
  return c;
}

Expected<std::vector<Credential>> credentials() {
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  std::vector<Credential> out;
  for (const auto& [key, value] : j->items())
    if (value.is_string() || value.is_object()) out.push_back(from_json(key, value));
  return out;
}

Expected<bool> remove_credential(const Host& host) {
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  std::vector<std::string> gone;
  for (const auto& [key, value] : j->items())
    if (from_json(key, value).host == host.text) gone.push_back(key);
  if (gone.empty()) return false;
  for (const auto& key : gone) j->erase(key);
  if (auto saved = save(*path, *j); !saved) return std::move(saved).error();
  return true;
}

Expected<std::optional<Credential>> credential_for(const Host& host, std::uint16_t port) {
  auto all = credentials();
  if (!all) return std::move(all).error();
  for (auto& c : *all)
    if (c.host == host.text && c.port == port) return std::optional<Credential>{std::move(c)};
  return std::optional<Credential>{};
}

std::size_t sentinel_prefix(std::string_view secret) {
  // The prefix a client checks is its scheme's name, before the random part:
  // lower-case letters and digits up to the last '-' or '_' of the first 16.
  std::size_t prefix = 0;
  for (std::size_t i = 0; i < std::min<std::size_t>(secret.size(), 16); ++i) {
    const char c = secret[i];
    if (c == '-' || c == '_')
      prefix = i + 1;
    else if (!std::islower(static_cast<unsigned char>(c)) && !std::isdigit(static_cast<unsigned char>(c)))
      break;
  }
  return secret.size() < prefix + kMinSentinelRandom ? 0 : prefix;
}

Expected<std::string> make_sentinel(std::string_view secret) {
  const std::size_t prefix = sentinel_prefix(secret);
  if (secret.size() < kMinSentinelRandom)
    return Error{"the secret is too short (" + std::to_string(secret.size()) +
                     " bytes) to be stood for by a "
                     "sentinel: a call would need the secret itself",
                 "", 0, Errc::bad_config};
  static constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  std::string out(secret.substr(0, prefix));
  unsigned char random[64];
  while (out.size() < secret.size()) {
    const ssize_t n = ::getrandom(random, sizeof random, 0);
    if (n < 0 && errno != EINTR) return sys_error("getrandom, for a sentinel");
    // 248 = 4 * 62: a byte past it is dropped, so every letter is as likely.
    for (ssize_t i = 0; i < n && out.size() < secret.size(); ++i)
      if (random[i] < 248) out.push_back(kAlphabet[random[i] % kAlphabet.size()]);
  }
  return out;
}

}  // namespace chock::net
