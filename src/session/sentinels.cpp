#include "session/sentinels.hpp"

#include <nlohmann/json.hpp>

#include "util/fs.hpp"
#include "util/json.hpp"

namespace chock::session {

namespace {

std::string key_of(const net::Credential& c) {
  return c.host + " " + std::to_string(c.port) + " " + c.env;
}

// Still a stand-in for `secret`: its length, and its public prefix.
bool fits(const std::string& sentinel, const std::string& secret) {
  return sentinel.size() == secret.size() &&
         sentinel.compare(0, net::sentinel_prefix(secret), secret, 0, net::sentinel_prefix(secret)) == 0;
}

}  // namespace

Expected<std::vector<StoodFor>> session_sentinels(const workspace::Session& s) {
  std::vector<StoodFor> out;
  auto all = net::credentials();
  if (!all) return std::move(all).error();
  for (auto& c : *all)
    if (!c.env.empty()) out.push_back({std::move(c), ""});
  if (out.empty()) return out;
  const std::string path = s.dir + "/sentinels.json";
  nlohmann::json kept = nlohmann::json::object();
  if (auto text = fs::read_file_nofollow(path, 1 << 20))
    if (auto parsed = parse_json(*text); parsed && parsed->is_object()) kept = std::move(*parsed);
  bool made = false;
  for (auto& stood : out) {
    const std::string key = key_of(stood.credential);
    const auto it = kept.find(key);
    if (it != kept.end() && it->is_string() && fits(it->get<std::string>(), stood.credential.secret)) {
      stood.sentinel = it->get<std::string>();
      continue;
    }
    auto sentinel = net::make_sentinel(stood.credential.secret);
    if (!sentinel) return std::move(sentinel).error();
    stood.sentinel = *sentinel;
    kept[key] = *sentinel;
    made = true;
  }
  if (made)
    if (auto w = fs::write_file_atomic(path, kept.dump() + "\n", 0600); !w) return std::move(w).error();
  return out;
}

}  // namespace chock::session
