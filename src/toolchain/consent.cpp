#include "toolchain/consent.hpp"

#include <cstdint>
#include <ctime>
#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "log/session_log.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"

namespace chock::toolchain {

namespace {

constexpr std::size_t kMaxRecord = 64 * 1024;

Expected<std::string> record_path(const std::string& project_root) {
  auto data = workspace::data_dir();
  if (!data) return std::move(data).error();
  return *data + "/toolchain-consent/" + log::project_key(project_root) + ".json";
}

std::string shell_quoted(const std::string& text) {
  bool plain = !text.empty();
  for (char c : text)
    plain = plain && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '/' || c == '.' || c == '_' || c == '-' || c == '+');
  if (plain) return text;
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace

const char* consent_name(Consent consent) {
  switch (consent) {
    case Consent::allowed:
      return "allowed";
    case Consent::denied:
      return "denied";
    case Consent::changed:
      return "changed since it was last allowed or denied";
    case Consent::never_asked:
      break;
  }
  return "never allowed";
}

Expected<ConsentState> consent_of(const std::string& project_root, const DevShellFile& file) {
  ConsentState state;
  state.sha256 = content_sha256(file);
  auto path = record_path(project_root);
  if (!path) return std::move(path).error();
  state.record = *path;
  // No record, or one that is not ours in shape: nothing was said.
  auto text = fs::read_file_nofollow(*path, kMaxRecord);
  if (!text) return state;
  auto parsed = parse_json(*text);
  if (!parsed || !parsed->is_object() || parsed->value("project", "") != project_root) return state;
  const std::string decision = parsed->value("decision", "");
  if (decision != "allow" && decision != "deny") return state;
  if (parsed->value("sha256", "") != state.sha256 || parsed->value("file", "") != file.path)
    state.consent = Consent::changed;
  else
    state.consent = decision == "allow" ? Consent::allowed : Consent::denied;
  return state;
}

Expected<void> record_consent(const std::string& project_root, const DevShellFile& file,
                              const std::string& sha256, bool allowed) {
  auto path = record_path(project_root);
  if (!path) return std::move(path).error();
  if (auto made = fs::make_dirs(path->substr(0, path->rfind('/')), 0700); !made)
    return std::move(made).error();
  const nlohmann::json record{{"project", project_root},
                              {"file", file.path},
                              {"sha256", sha256},
                              {"decision", allowed ? "allow" : "deny"},
                              {"at", static_cast<std::int64_t>(std::time(nullptr))}};
  return fs::write_file_atomic(*path, record.dump(2) + "\n", 0600);
}

std::string allow_command(const std::string& project_root) {
  return "chock toolchain allow --project " + shell_quoted(project_root);
}

}  // namespace chock::toolchain
