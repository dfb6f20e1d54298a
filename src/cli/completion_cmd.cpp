// chock completion bash|zsh: a completion script made from the command line
// itself (every subcommand and option CLI11 knows), so it cannot drift from
// it; session ids come from `chock workspace list` and policy actions from
// the names Chock asks about.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/command.hpp"
#include "policy/policy.hpp"

namespace chock::cli {

namespace {

// "workspace remove" -> its options; "workspace" -> its subcommands too.
struct Level {
  std::vector<std::string> subcommands;
  std::vector<std::string> options;
};

void collect(const CLI::App& app, const std::string& path, std::map<std::string, Level>& out) {
  Level& level = out[path];
  for (const CLI::Option* o : app.get_options()) {
    if (!o->nonpositional() || o->get_group().empty()) continue;
    for (const auto& l : o->get_lnames()) level.options.push_back("--" + l);
    for (const auto& s : o->get_snames()) level.options.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // chock's own, not for people
    level.subcommands.push_back(sub->get_name());
    collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
  }
}

std::string joined(const std::vector<std::string>& words) {
  std::string out;
  for (const auto& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

std::string bash_script() {
  CLI::App app{"chock", "chock"};
  Action ignored;
  add_every_command(Command(app), ignored);
  std::map<std::string, Level> levels;
  collect(app, "", levels);
  std::string actions;
  for (const char* a :
       {policy::kSandboxJit, policy::kWorkspaceApply, policy::kMemoryWrite, policy::kToolchainNix})
    actions += std::string(a) + "= ";
  actions += "net.connect. net.fetch. device.usb. device.tty. device.path.dev. mcp. tool.";
  std::string s =
      "# bash completion for chock (chock completion bash)\n"
      "_chock() {\n"
      "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path= i w\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    w=${COMP_WORDS[i]}\n"
      "    [[ $w == -- ]] && return 0\n"
      "    [[ $w == -* ]] && continue\n"
      "    case \"${path:+$path }$w\" in\n";
  for (const auto& entry : levels) {
    if (entry.first.empty()) continue;
    s += "      \"";
    s += entry.first;
    s += "\") path=\"";
    s += entry.first;
    s += "\" ;;\n";
  }
  s += "    esac\n"
       "  done\n"
       "  case $prev in\n"
       "    --session)\n"
       "      COMPREPLY=($(compgen -W \"$(chock workspace list 2>/dev/null | awk 'NR > 1 { print $1 }')\" -- "
       "\"$cur\"))\n"
       "      return 0 ;;\n"
       "    --policy-rule)\n"
       "      compopt -o nospace 2>/dev/null\n"
       "      COMPREPLY=($(compgen -W \"" +
       actions +
       "\" -- \"$cur\"))\n"
       "      return 0 ;;\n"
       "    --project|--cwd|--result|--org-bundle|--ro|--rw|--ro-file|--deny|--carry|--output|-o|--device)\n"
       "      COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "      return 0 ;;\n"
       "  esac\n"
       "  local options= subcommands=\n"
       "  case $path in\n";
  for (const auto& [path, level] : levels)
    s += "    \"" + path + "\") options=\"" + joined(level.options) + "\" subcommands=\"" +
         joined(level.subcommands) + "\" ;;\n";
  s += "  esac\n"
       "  if [[ $cur == -* ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$options\" -- \"$cur\"))\n"
       "  elif [[ -n $subcommands ]]; then\n"
       "    COMPREPLY=($(compgen -W \"$subcommands\" -- \"$cur\"))\n"
       "  else\n"
       "    COMPREPLY=($(compgen -f -- \"$cur\"))\n"
       "  fi\n"
       "}\n"
       "complete -F _chock chock\n";
  return s;
}

int print_completion(const std::string& shell) {
  if (shell == "bash") {
    std::fputs(bash_script().c_str(), stdout);
    return 0;
  }
  // zsh runs the same function through its bash completion layer.
  std::fputs(
      "#compdef chock\n# zsh completion for chock (chock completion zsh)\n"
      "autoload -U +X bashcompinit && bashcompinit\n",
      stdout);
  std::fputs(bash_script().c_str(), stdout);
  return 0;
}

}  // namespace

void add_completion_command(Command app, Action& action) {
  auto shell = std::make_shared<std::string>();
  Command cmd =
      app.add_subcommand("completion", "Print a shell completion script: chock completion bash|zsh");
  cmd.add_option("shell", *shell, "bash or zsh").required().check(Check::one_of({"bash", "zsh"}));
  cmd.callback([shell, &action] { action = [shell] { return print_completion(*shell); }; });
}

}  // namespace chock::cli
