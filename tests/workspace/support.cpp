#include "support.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace chock::test::ws {

namespace {

std::map<std::string, std::string> git_env() {
  return {{"GIT_CONFIG_GLOBAL", "/dev/null"},    {"GIT_CONFIG_SYSTEM", "/dev/null"},
          {"GIT_AUTHOR_NAME", "Test Person"},    {"GIT_AUTHOR_EMAIL", "person@example.invalid"},
          {"GIT_COMMITTER_NAME", "Test Person"}, {"GIT_COMMITTER_EMAIL", "person@example.invalid"}};
}

std::string real(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) != nullptr ? buf : p;
}

void walk(const std::string& root, const std::string& rel, std::map<std::string, std::string>& out) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n == "." || n == "..") continue;
    std::string sub = rel.empty() ? n : rel + "/" + n;
    std::string path = root + "/" + sub;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      out[sub + "/"] = "";
      walk(root, sub, out);
    } else if (S_ISLNK(st.st_mode)) {
      char buf[PATH_MAX];
      ssize_t len = ::readlink(path.c_str(), buf, sizeof buf);
      out[sub] = "-> " + std::string(buf, len > 0 ? static_cast<size_t>(len) : 0);
    } else if (S_ISREG(st.st_mode)) {
      out[sub] = read_file(path);
    } else {
      out[sub] = "(special)";
    }
  }
  ::closedir(d);
}

}  // namespace

Output git(const std::string& dir, const std::vector<std::string>& args, const std::string& stdin_data) {
  std::vector<std::string> argv{"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.env = git_env();
  o.stdin_data = stdin_data;
  return run_process(argv, o);
}

std::string git_ok(const std::string& dir, const std::vector<std::string>& args) {
  Output o = git(dir, args);
  EXPECT_EQ(o.status, 0) << "git " << args.at(0) << ": " << o.err;
  std::string s = o.out;
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

Fixture::Fixture() : dir_("chock-ws") {
  project_ = real(dir_ / "project");
  ::mkdir((dir_ / "project").c_str(), 0755);
  project_ = real(dir_ / "project");
  data_ = dir_ / "data";
  ::mkdir(data_.c_str(), 0700);
  state_ = dir_ / "state";
  ::mkdir(state_.c_str(), 0700);
  config_ = dir_ / "config";
  ::mkdir(config_.c_str(), 0700);
  cache_ = dir_ / "cache";
  ::mkdir(cache_.c_str(), 0700);
}

void Fixture::init_git() {
  git_ok(project_, {"init", "-q", "-b", "main"});
  init_plain();
  commit_all("initial");
}

void Fixture::init_plain() {
  write_file(file("a.txt"), "alpha\n");
  write_file(file("b.txt"), "bravo\n");
  ::mkdir(file("sub").c_str(), 0755);
  write_file(file("sub/c.txt"), "charlie\n");
}

void Fixture::commit_all(const std::string& message) {
  git_ok(project_, {"add", "-A"});
  git_ok(project_, {"commit", "-q", "-m", message});
}

RunOptions Fixture::options() const {
  RunOptions o;
  o.cwd = project_;
  o.env = {{"XDG_DATA_HOME", data_},
           {"XDG_STATE_HOME", state_},
           {"XDG_CONFIG_HOME", config_},
           {"XDG_CACHE_HOME", cache_}};
  for (const auto& [name, value] : env_) o.env[name] = value;
  return o;
}

Output Fixture::chock(const std::vector<std::string>& args, const std::string& stdin_data) const {
  RunOptions o = options();
  o.stdin_data = stdin_data;
  return test::chock(args, o);
}

Output Fixture::on_terminal(const std::vector<std::string>& args, const std::string& typed) const {
  auto quote = [](const std::string& a) {
    std::string q = "'";
    for (char c : a) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  };
  std::string command = quote(chock_binary());
  for (const auto& a : args) command += " " + quote(a);
  RunOptions o = options();
  o.stdin_data = typed;
  o.timeout = std::chrono::seconds(60);
  // -e: script exits with the command's status; -q: no banner. Its log goes nowhere.
  return run_process({"script", "-qec", command, "/dev/null"}, o);
}

Output Fixture::run(const std::vector<std::string>& flags, const std::string& script) const {
  std::vector<std::string> args{"run"};
  args.insert(args.end(), flags.begin(), flags.end());
  args.insert(args.end(), {"--", "sh", "-c", script});
  return chock(args);
}

std::string kept_session(const Fixture& f, const std::string& script) {
  Output o = f.run({"--keep"}, script);
  EXPECT_EQ(o.status, 0) << describe(o);
  return session_id(o);
}

std::string session_id(const Output& o) {
  const std::string marker = "chock: session ";
  auto at = o.err.find(marker);
  if (at == std::string::npos) return "";
  auto start = at + marker.size();
  auto end = o.err.find(' ', start);
  return o.err.substr(start, end - start);
}

std::vector<std::string> files_containing(const std::string& dir, const std::string& needle) {
  std::map<std::string, std::string> all;
  walk(dir, "", all);
  std::vector<std::string> out;
  for (const auto& [path, bytes] : all)
    if (bytes.find(needle) != std::string::npos) out.push_back(path);
  return out;
}

std::map<std::string, std::string> snapshot(const std::string& dir) {
  std::map<std::string, std::string> out;
  walk(dir, "", out);
  return out;
}

std::string describe(const Output& o) {
  std::ostringstream s;
  s << "status " << o.status << "\n--- stdout\n" << o.out << "--- stderr\n" << o.err;
  return s.str();
}

// The session's log: one project folder under the state directory holds it.
std::string log_path(const Fixture& f, const std::string& id) {
  std::string root = f.state() + "/chock/sessions";
  DIR* d = ::opendir(root.c_str());
  std::string found;
  while (d != nullptr && found.empty()) {
    dirent* e = ::readdir(d);
    if (e == nullptr) break;
    std::string path = root + "/" + e->d_name + "/" + id + ".jsonl";
    if (exists(path)) found = path;
  }
  if (d != nullptr) ::closedir(d);
  return found;
}

std::vector<std::string> log_lines(const Fixture& f, const std::string& id) {
  std::vector<std::string> lines;
  std::string path = log_path(f, id);
  if (path.empty()) return lines;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool has_event(const std::vector<std::string>& lines, const std::string& event, const std::string& also) {
  for (const auto& l : lines)
    if (l.find("\"event\":\"" + event + "\"") != std::string::npos && l.find(also) != std::string::npos)
      return true;
  return false;
}

}  // namespace chock::test::ws
