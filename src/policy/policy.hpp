// The policy table: rules that answer an action name with deny, ask or allow,
// folded over three layers: the organisation bundle, the project's chock.zon,
// and the person's own --policy-rule rows, which are rows of the project's
// layer for that run (a row of theirs replaces the project's row for the same
// action). The answer is the minimum of the bundle's and the project's.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"

namespace chock::policy {

// From narrow to wide; the numeric order is the order of the ratchet.
enum class Decision { deny = 0, ask = 1, allow = 2 };
[[nodiscard]] const char* decision_name(Decision decision);  // "deny", "ask", "allow"
// "deny", "ask" or "allow"; anything else is an Error (Errc::bad_config) naming the text.
[[nodiscard]] Expected<Decision> parse_decision(std::string_view text);

struct Rule {
  std::string action;  // "net.connect.com.github.443", or a pattern "net.connect.com.github.*"
  Decision decision = Decision::ask;
  std::string origin;  // where it was written: "/p/chock.zon:4:9", "--policy-rule", ...
};

// Checks an action or a pattern: dot-separated, non-empty labels of
// [a-z0-9_-], `*` only as the whole last label after at least one other
// label; a bare `*` is an error. The Error (Errc::bad_config) names the
// action and what is wrong with it. Every name the builders below make
// passes (device paths are escaped into the same alphabet).
[[nodiscard]] Expected<void> validate_action(std::string_view action);

// Where a rule was written. command_line is the person's --policy-rule (on
// `chock run`, or in an agent's argv of `chock mcp`): never a call's or a
// project file's to set. It speaks for the project.
enum class Layer { bundle, project, command_line };
[[nodiscard]] const char* layer_name(Layer layer);  // "bundle", "project", "command line"

// The answer for one action, and why.
struct Answer {
  Decision decision = Decision::ask;
  // Each layer's own answer and the rule that gave it (nullopt: no rule of
  // that layer names the action, so it answers its default: bundle allow,
  // project ask, command line allow, i.e. it leaves the project's answer).
  struct LayerAnswer {
    Layer layer;
    Decision decision;
    std::optional<Rule> rule;
    // The project's answer when a command-line row names the action: the
    // person's row stands in its place, and this one is not folded.
    bool replaced = false;
  };
  std::vector<LayerAnswer> layers;  // always three, in Layer order
  // The minimum of the layers not replaced; the one that gave it: on equal
  // answers the one that has a rule, then bundle before project before
  // command line.
  Layer deciding_layer = Layer::project;
  std::optional<Rule> deciding_rule;  // its rule; nullopt when it was a default
};

class Table {
 public:
  // Rules are expected to have passed validate_action. One that has not is
  // still harmless: only a well-formed `x.*` is read as a pattern, anything
  // else matches nothing but the identical action name.
  void add(Layer layer, Rule rule);
  // Most specific rule per layer (exact beats a pattern, a longer prefix beats
  // a shorter one, a tie goes to the narrower decision); a command-line rule
  // replaces the project's answer; then the minimum.
  [[nodiscard]] Answer decide(std::string_view action) const;
  struct Entry {
    Layer layer;
    Rule rule;
  };
  [[nodiscard]] const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// Action names.
//
// A value that becomes one label (a host label, a device path, an MCP server
// name) is escaped into [a-z0-9_-] so that every name passes validate_action
// and no value can add labels or a `*`: the bytes a-z, 0-9 and '-' stay as
// they are, every other byte (upper case, '/', '.', '_' itself, ...) becomes
// '_' and two lower-case hex digits. The escape is reversible and keeps case
// apart ('A' is "_41"). An empty value is the label "_", which no escaped
// non-empty value can be. A device path is one label a name, each escaped:
// device_path("/dev/ttyACM0") is "device.path.dev.tty_41_43_4d0",
// device_path("/dev/kvm") "device.path.dev.kvm".
//
// Hosts are written with their labels reversed and lowercased (DNS names are
// case-insensitive), one trailing dot dropped, then each label escaped:
// net_connect("github.com", 443) is "net.connect.com.github.443".
[[nodiscard]] std::string net_connect(std::string_view host, unsigned port);
[[nodiscard]] std::string net_fetch(std::string_view host);               // net.fetch.com.github
[[nodiscard]] std::string device_usb(unsigned vendor, unsigned product);  // device.usb.1d50.6018
[[nodiscard]] std::string device_path(std::string_view path);             // device.path.dev.kvm
[[nodiscard]] std::string device_tty_serial(std::string_view serial);     // device.tty.serial.<escaped>
[[nodiscard]] std::string device_tty(unsigned vendor, unsigned product);  // device.tty.1d50.6018
[[nodiscard]] std::string mcp_network(std::string_view server);           // mcp.<escaped server>.network
// mcp.<escaped server>.tool.<tool>: a tool name made only of [a-z0-9_-] with no
// '_' before two hex digits is its own label (read_text_file), any other is
// escaped; the two sets cannot meet, since every escape holds such a '_'.
[[nodiscard]] std::string mcp_tool(std::string_view server, std::string_view tool);
// The label escape itself, and its inverse (nullopt when `label` is not an
// escape's output), e.g. to show the path a device.path rule names.
[[nodiscard]] std::string escape_label(std::string_view value);
[[nodiscard]] std::optional<std::string> unescape_label(std::string_view label);
inline constexpr const char* kSandboxJit = "sandbox.jit";
inline constexpr const char* kWorkspaceApply = "workspace.apply";
inline constexpr const char* kMemoryWrite = "memory.write";
// Evaluating the project's Nix dev shell on the host: deny never does, ask
// (the default) does for content the person allowed; a project's own allow
// is read as ask (the project is what asks), a bundle's allow needs no yes.
inline constexpr const char* kToolchainNix = "toolchain.nix";

// An OSC sequence a call may write to the person's terminal:
// terminal.osc.<number> (8: hyperlinks). None passes by default.
inline constexpr const char* kTerminalOscPrefix = "terminal.osc.";

// Whether a person, not the project's file, allows `action`: an allow of
// the command line's or the bundle's own rule, and no layer that denies it.
// The project's own allow is not counted (its file is what asks); its row
// is replaced by a command-line row for the same action, as in every fold.
[[nodiscard]] bool person_allows(const Table& table, std::string_view action);

// What Chock says when `action` asks and nobody can answer: which row of
// chock.zon answers it instead.
[[nodiscard]] std::string nobody_to_ask(const std::string& action);

}  // namespace chock::policy
