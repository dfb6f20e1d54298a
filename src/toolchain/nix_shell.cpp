#include "toolchain/nix_shell.hpp"

#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "chock/workspace.hpp"
#include "log/session_log.hpp"
#include "util/escape.hpp"
#include "util/fs.hpp"
#include "util/json.hpp"
#include "util/sha256.hpp"
#include "util/split.hpp"
#include "util/store_path.hpp"
#include "util/subprocess.hpp"

namespace chock::toolchain {

namespace {

using Json = nlohmann::json;

// The variables of the shell's build that are not the shell's to set (what
// `nix develop` leaves out too), and the one naming its build output.
constexpr const char* kBuildOnly[] = {"BASHOPTS",   "HOME",          "NIX_BUILD_TOP", "NIX_ENFORCE_PURITY",
                                      "NIX_LOG_FD", "NIX_REMOTE",    "PPID",          "SHELL",
                                      "SHELLOPTS",  "SSL_CERT_FILE", "TEMP",          "TEMPDIR",
                                      "TERM",       "TMP",           "TMPDIR",        "TZ",
                                      "UID",        "out",           "outputs"};
constexpr std::size_t kMaxAnswer = 64ULL << 20;     // nix's JSON, the cache file
constexpr std::chrono::seconds kNixDeadline{1800};  // a first build may take long

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_variable_name(const std::string& name) {
  if (name.empty() || (std::isdigit(static_cast<unsigned char>(name[0])) != 0)) return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; });
}

// Nix's name for this machine's platform, as builtins.currentSystem says it.
std::string nix_system() {
  utsname u{};
  ::uname(&u);
  std::string machine = u.machine;
  if (machine == "i386" || machine == "i586" || machine == "i686") machine = "i686";
  if (machine == "arm64") machine = "aarch64";
  return machine + "-linux";
}

// Nix's message in one line: from its first "error:" on, the whitespace of
// its layout folded, cut to a readable length.
std::string nix_message(const std::string& err, int status) {
  std::string text = err;
  if (auto at = text.find("error:"); at != std::string::npos) text = text.substr(at);
  std::string line;
  bool space = false;
  for (char c : text) {
    if (c == '\n' || c == '\t' || c == ' ' || c == '\r') {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
  }
  if (line.size() > 600) line = line.substr(0, 600) + " ...";
  if (line.empty()) line = "nix exited with status " + std::to_string(status) + " and said nothing";
  return printable(line);
}

Expected<ProgramOutput> run_nix(const std::string& program, std::vector<std::string> args,
                                const std::string& cwd) {
  std::vector<std::string> argv{program, "--extra-experimental-features", "nix-command flakes"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(ProgramRun{std::move(argv), current_environment(), cwd, {}, kNixDeadline, {}});
}

Expected<ProgramOutput> run_nix_store(const std::string& nix, std::vector<std::string> args) {
  std::vector<std::string> argv{nix.substr(0, nix.rfind('/')) + "/nix-store"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(ProgramRun{std::move(argv), current_environment(), {}, {}, kNixDeadline, {}});
}

// The first directory of the shell's PATH that has `name`, followed to the
// file it is, kept only when that file is inside the closure.
std::string closure_program(const DevShell& shell, const std::string& name) {
  for (const auto& [k, v] : shell.variables) {
    if (k != "PATH") continue;
    for (const auto& dir : split_nonempty(v, ':')) {
      char real[PATH_MAX];
      const std::string candidate = dir + "/" + name;  // NOLINT(performance-inefficient-string-concatenation)
      if (::realpath(candidate.c_str(), real) == nullptr || !is_regular(real) || ::access(real, X_OK) != 0)
        continue;
      std::string found = real;
      for (const auto& p : shell.store_paths)
        if (found.starts_with(p + "/")) return found;
    }
  }
  return {};
}

Json to_json(const DevShell& shell, const std::string& key) {
  Json vars = Json::object();
  for (const auto& [k, v] : shell.variables) vars[k] = v;
  return Json{{"key", key},
              {"source", shell.source},
              {"store_paths", shell.store_paths},
              {"variables", vars},
              {"bytes", shell.bytes},
              {"evaluation_ms", shell.evaluation_ms},
              {"made", static_cast<std::int64_t>(std::time(nullptr))}};
}

// A kept answer, trusted no further than its shape: store paths that are
// store paths and still there, variables with proper names. nullopt: ask again.
std::optional<DevShell> read_answer(const std::string& file, const std::string& key) {
  auto text = fs::read_file_nofollow(file, kMaxAnswer);
  if (!text) return std::nullopt;
  auto parsed = parse_json(*text);
  if (!parsed) return std::nullopt;
  Json& j = *parsed;
  if (!j.is_object() || j.value("key", "") != key || !j["store_paths"].is_array() ||
      !j["variables"].is_object())
    return std::nullopt;
  DevShell shell;
  shell.source = j.value("source", "");
  for (const auto& p : j["store_paths"]) {
    struct stat st {};
    if (!p.is_string() || !is_store_path(p.get<std::string>()) ||
        ::lstat(p.get<std::string>().c_str(), &st) != 0)
      return std::nullopt;
    shell.store_paths.push_back(p.get<std::string>());
  }
  for (const auto& [k, v] : j["variables"].items()) {
    if (!v.is_string() || !is_variable_name(k) || v.get<std::string>().find('\0') != std::string::npos)
      return std::nullopt;
    shell.variables.emplace_back(k, v.get<std::string>());
  }
  shell.bytes = j.value("bytes", std::uint64_t{0});
  shell.evaluation_ms = j.value("evaluation_ms", 0.0);
  return shell;
}

// Nix's --json answer: the exported string variables the shell sets.
Expected<std::vector<std::pair<std::string, std::string>>> shell_variables(const std::string& answer,
                                                                           const std::string& source) {
  auto parsed = parse_json(answer);
  const Json j = parsed ? std::move(*parsed) : Json();
  if (!j.is_object() || !j.contains("variables") || !j["variables"].is_object())
    return Error{source + ": nix print-dev-env gave no variables (is this Nix older than 2.8?)", "", 0,
                 Errc::bad_config};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, v] : j["variables"].items()) {
    if (!v.is_object() || v.value("type", "") != "exported" || !v.contains("value") ||
        !v["value"].is_string())
      continue;
    if (std::find(std::begin(kBuildOnly), std::end(kBuildOnly), name) != std::end(kBuildOnly)) continue;
    const std::string value = v["value"].get<std::string>();
    if (!is_variable_name(name) || value.find('\0') != std::string::npos) continue;
    out.emplace_back(name, value);
  }
  return out;
}

Expected<DevShell> evaluate(const std::string& nix, const DevShellFile& file, const std::string& root,
                            const std::string& profile) {
  std::vector<std::string> args{"print-dev-env", "--json", "--profile", profile};
  if (file.kind == DevShellFile::Kind::flake)
    args.push_back(root + "#devShells." + nix_system() + ".default");
  else
    args.insert(args.end(), {"--file", file.path});
  const auto started = std::chrono::steady_clock::now();
  auto printed = run_nix(nix, args, root);
  if (!printed) return std::move(printed).error();
  if (printed->status != 0)
    return Error{
        file.path + ": the Nix dev shell did not evaluate: " + nix_message(printed->err, printed->status), "",
        0, Errc::bad_config};
  DevShell shell;
  shell.source = file.path;
  auto vars = shell_variables(printed->out, file.path);
  if (!vars) return std::move(vars).error();
  shell.variables = std::move(*vars);
  auto closure = run_nix_store(nix, {"--query", "--requisites", profile});
  if (!closure) return std::move(closure).error();
  if (closure->status != 0)
    return Error{file.path + ": the dev shell's closure: " + nix_message(closure->err, closure->status), "",
                 0};
  for (const auto& p : output_lines(closure->out))
    if (is_store_path(p)) shell.store_paths.push_back(p);
  if (shell.store_paths.empty()) return Error{file.path + ": the dev shell's closure is empty", "", 0};
  std::vector<std::string> size_args{"--query", "--size"};
  size_args.insert(size_args.end(), shell.store_paths.begin(), shell.store_paths.end());
  if (auto sizes = run_nix_store(nix, size_args); sizes && sizes->status == 0)
    for (const auto& n : output_lines(sizes->out)) shell.bytes += std::strtoull(n.c_str(), nullptr, 10);
  shell.evaluation_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  return shell;
}

Expected<std::string> answers_dir(const std::string& project_root) {
  auto data = workspace::data_dir();
  if (!data) return std::move(data).error();
  return *data + "/toolchains/" + log::project_key(project_root);
}

// The answers and profiles of the shell's earlier forms: their store paths
// are then Nix's to collect (a profile is a garbage-collector root).
void forget_others(const std::string& dir, const std::string& keep) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  std::vector<std::string> old;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != ".." && !name.starts_with(keep)) old.push_back(name);
  }
  ::closedir(d);
  for (const auto& name : old) ::unlink(std::string(dir).append("/").append(name).c_str());
}

}  // namespace

std::optional<DevShellFile> find_dev_shell(const std::string& project_root) {
  if (is_regular(project_root + "/flake.nix"))
    return DevShellFile{DevShellFile::Kind::flake, project_root + "/flake.nix"};
  if (is_regular(project_root + "/shell.nix"))
    return DevShellFile{DevShellFile::Kind::shell_nix, project_root + "/shell.nix"};
  return std::nullopt;
}

std::string find_nix() {
  return find_on_path("nix");
}

std::string content_sha256(const DevShellFile& file) {
  auto text = fs::read_file(file.path);
  const std::string own = sha256_hex(text ? *text : std::string());
  // shell.nix: what `sha256sum shell.nix` says, so a person can check it.
  if (file.kind == DevShellFile::Kind::shell_nix) return own;
  const std::string lock = file.path.substr(0, file.path.rfind('/')) + "/flake.lock";
  auto locked = fs::read_file(lock);
  return sha256_hex("flake.nix " + own + "\nflake.lock " + (locked ? sha256_hex(*locked) : "none") + "\n");
}

Expected<std::optional<DevShell>> dev_shell(const std::string& project_root,
                                            const std::string& allowed_sha256) {
  auto file = find_dev_shell(project_root);
  if (!file) return std::optional<DevShell>();
  const std::string nix = find_nix();
  if (nix.empty()) return std::optional<DevShell>();
  auto dir = answers_dir(project_root);
  if (!dir) return std::move(dir).error();
  if (auto made = fs::make_dirs(*dir, 0700); !made) return std::move(made).error();
  const std::string key = content_sha256(*file);
  if (key != allowed_sha256)
    return Error{file->path + " changed after it was checked against what was allowed; it is not evaluated",
                 "", 0, Errc::bad_config};
  const std::string base = *dir + "/" + key.substr(0, 16);
  std::optional<DevShell> shell = read_answer(base + ".json", key);
  if (shell) {
    shell->from_cache = true;
  } else {
    auto made = evaluate(nix, *file, project_root, base + ".profile");
    if (!made) return std::move(made).error();
    shell = std::move(*made);
    if (auto kept = fs::write_file_atomic(base + ".json", to_json(*shell, key).dump() + "\n", 0600); !kept)
      return std::move(kept).error();
    forget_others(*dir, key.substr(0, 16));
  }
  shell->cache_file = base + ".json";
  shell->shell_program = closure_program(*shell, "sh");
  if (shell->shell_program.empty()) shell->shell_program = closure_program(*shell, "bash");
  shell->env_program = closure_program(*shell, "env");
  return shell;
}

Expected<bool> forget_dev_shell(const std::string& project_root) {
  auto dir = answers_dir(project_root);
  if (!dir) return std::move(dir).error();
  if (!fs::is_dir(*dir)) return false;
  if (auto removed = fs::remove_tree(*dir); !removed) return std::move(removed).error();
  return true;
}

void apply_variables(const DevShell& shell, std::vector<std::string>& env,
                     const std::vector<std::string>& keep) {
  for (const auto& variable : shell.variables) {
    const std::string& name = variable.first;
    if (std::find(keep.begin(), keep.end(), name) != keep.end()) continue;
    std::erase_if(env, [&name](const std::string& e) {
      return e.size() > name.size() && e[name.size()] == '=' && e.compare(0, name.size(), name) == 0;
    });
    env.push_back(std::string(name).append("=").append(variable.second));
  }
}

}  // namespace chock::toolchain
