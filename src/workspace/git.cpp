#include "workspace/git.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "util/subprocess.hpp"

extern char** environ;

namespace chock::workspace::git {

namespace {

std::vector<std::string> environment(const Env& env) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    auto eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = entry.substr(0, eq);
    if (name.rfind("GIT_", 0) == 0 || name.rfind("LC_", 0) == 0 || name == "LANG" || name == "LANGUAGE")
      continue;
    vars[name] = entry.substr(eq + 1);
  }
  vars["GIT_CONFIG_GLOBAL"] = "/dev/null";
  vars["GIT_CONFIG_SYSTEM"] = "/dev/null";
  vars["GIT_CONFIG_NOSYSTEM"] = "1";
  vars["GIT_TERMINAL_PROMPT"] = "0";
  vars["GIT_ASKPASS"] = "true";
  vars["GIT_OPTIONAL_LOCKS"] = "0";
  vars["LC_ALL"] = "C";
  // A repository whose config splits its index would have git write the
  // shared part beside GIT_DIR, the real .git, and leave the base's or the
  // session's index naming a file their git dir does not have.
  vars["GIT_CONFIG_COUNT"] = "1";
  vars["GIT_CONFIG_KEY_0"] = "core.splitIndex";
  vars["GIT_CONFIG_VALUE_0"] = "false";
  for (const auto& [k, v] : env.vars) vars[k] = v;
  std::vector<std::string> out;
  out.reserve(vars.size());
  for (const auto& [k, v] : vars) out.push_back(std::string(k).append("=").append(v));
  return out;
}

}  // namespace

std::string Output::first_error_line() const {
  std::string e = err.empty() ? out : err;
  auto nl = e.find('\n');
  e = e.substr(0, nl);
  return e.empty() ? "git exited with status " + std::to_string(status) : e;
}

Expected<Output> run(const std::vector<std::string>& args, const Env& env) {
  ProgramRun program{{"git"}, environment(env), env.cwd, env.stdin_data, env.deadline, env.as};
  program.argv.insert(program.argv.end(), args.begin(), args.end());
  auto r = run_program(program);
  if (!r) return std::move(r).error();
  return Output{r->status, std::move(r->out), std::move(r->err)};
}

Expected<std::string> capture(const std::vector<std::string>& args, const Env& env, const std::string& what) {
  auto r = run(args, env);
  if (!r) return std::move(r).error();
  if (!r->ok()) return Error{what + ": " + r->first_error_line(), env.cwd, 0};
  return std::move(r->out);
}

Env repo_env(const std::string& common, const std::string& work_tree, const std::string& index,
             const std::string& session_objects) {
  Env env;
  env.vars.emplace_back("GIT_DIR", common);
  if (!work_tree.empty()) {
    env.vars.emplace_back("GIT_WORK_TREE", work_tree);
    env.cwd = work_tree;
  }
  if (!index.empty()) env.vars.emplace_back("GIT_INDEX_FILE", index);
  if (!session_objects.empty()) {
    env.vars.emplace_back("GIT_OBJECT_DIRECTORY", session_objects);
    env.vars.emplace_back("GIT_ALTERNATE_OBJECT_DIRECTORIES", common + "/objects");
  }
  return env;
}

std::string chomp(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < s.size()) {
    std::size_t next = s.find(sep, pos);
    if (next == std::string::npos) next = s.size();
    out.push_back(s.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

bool is_object_id(const std::string& s) {
  if (s.size() != 40 && s.size() != 64) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace chock::workspace::git
