// A subcommand's flags as its file declares them, without CLI11's headers.
// CLI11 2.1 is header-only: every file that included <CLI/CLI.hpp> compiled
// its validators, formatter and parsers anew, some 10 s of a 15 s compile.
// Command and Flag hand each call to CLI11 in flags.cpp, with CLI11's own
// names, so the command line behaves exactly as CLI11 makes it; only
// flags.cpp and the two files that run or walk the whole parser (main.cpp,
// completion_cmd.cpp) include CLI11.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace CLI {
class App;
class Option;
class Validator;
}  // namespace CLI

namespace chock::cli {

// What a value must be; a bad one gets CLI11's message naming the flag.
class Check {
 public:
  // One of `names` (CLI::IsMember).
  static Check one_of(std::initializer_list<const char*> names);
  // A whole number from `min` to `max` (CLI::Range, of that type).
  static Check range(int min, int max);
  static Check range(long long min, long long max);
  // A number of 0 or more (CLI::NonNegativeNumber).
  static Check non_negative();
  // A number of seconds above 0, as --timeout takes it (CLI11's
  // PositiveNumber would print the whole range of a double for a non-number).
  static Check positive_seconds();
  // `test` says what is wrong with a value, or nothing.
  static Check custom(std::function<std::string(const std::string&)> test);

 private:
  explicit Check(std::shared_ptr<const CLI::Validator> v) : validator_(std::move(v)) {}
  std::shared_ptr<const CLI::Validator> validator_;
  friend class Flag;
};

// One option or positional of a subcommand (a CLI::Option).
class Flag {
 public:
  explicit Flag(CLI::Option* option) : option_(option) {}
  Flag required();
  Flag check(const Check& check);
  Flag type_name(const std::string& name);
  Flag type_size(int size);
  Flag expected(int count);
  // Every use of a repeated flag is kept (MultiOptionPolicy::TakeAll).
  Flag take_all();
  Flag trigger_on_parse();
  Flag excludes(Flag other);

 private:
  CLI::Option* option_;
};

// A subcommand (a CLI::App), or the whole command line.
class Command {
 public:
  explicit Command(CLI::App& app) : app_(&app) {}
  Command add_subcommand(const std::string& name, const std::string& description);
  // Made for each type a subcommand takes, in flags.cpp: std::string,
  // std::vector<std::string>, double, unsigned, std::uint16_t, std::uint64_t,
  // long long, std::optional<int>.
  template <typename T>
  Flag add_option(const std::string& name, T& into, const std::string& description = "");
  // `on_value` runs with each value as it parses; for std::string and double.
  template <typename T>
  Flag add_option_function(const std::string& name, std::function<void(const T&)> on_value,
                           const std::string& description = "");
  Flag add_flag(const std::string& name, bool& into, const std::string& description);
  Flag get_option(const std::string& name);
  Command require_subcommand(int count);
  Command positionals_at_end();
  Command group(const std::string& name);
  void callback(std::function<void()> run);
  void final_callback(std::function<void()> run);
  // After parsing: this subcommand was given; one of its subcommands was.
  [[nodiscard]] bool parsed() const;
  [[nodiscard]] bool subcommand_given() const;
  [[nodiscard]] CLI::App& app() const { return *app_; }

 private:
  CLI::App* app_;
};

}  // namespace chock::cli
