#include "net/credentials.hpp"

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

namespace chock::net {

namespace {

constexpr std::size_t kMaxFileBytes = 1 << 20;

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

}  // namespace

Expected<std::string> credentials_path() {
  auto data = workspace::data_dir();
  if (!data) return data;
  return *data + "/credentials.json";
}

Expected<void> set_credential(const Host& host, std::string_view secret) {
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.remove_suffix(1);
  if (secret.empty()) return Error{"no secret was given on stdin", host.text, 0, Errc::bad_config};
  if (secret.size() > kMaxSecretBytes)
    return Error{"the secret is longer than " + std::to_string(kMaxSecretBytes) + " bytes", host.text, 0,
                 Errc::bad_config};
  for (char c : secret)
    if (c < 0x20 || c > 0x7e)
      return Error{"the secret holds a control or non-ASCII byte (a header value is printable ASCII)",
                   host.text, 0, Errc::bad_config};
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  const std::string value =
      secret.find(' ') == std::string_view::npos ? "Bearer " + std::string(secret) : std::string(secret);
  (*j)[host.text] = value;
  return save(*path, *j);
}

Expected<std::vector<std::string>> credential_hosts() {
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  std::vector<std::string> out;
  for (const auto& [host, value] : j->items()) out.push_back(host);
  return out;
}

Expected<bool> remove_credential(const Host& host) {
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  if (j->erase(host.text) == 0) return false;
  if (auto saved = save(*path, *j); !saved) return std::move(saved).error();
  return true;
}

Expected<std::optional<std::string>> credential_for(const Host& host) {
  auto path = credentials_path();
  if (!path) return std::move(path).error();
  auto j = load(*path);
  if (!j) return std::move(j).error();
  auto it = j->find(host.text);
  if (it == j->end() || !it->is_string()) return std::optional<std::string>{};
  return std::optional<std::string>{it->get<std::string>()};
}

}  // namespace chock::net
