#include "cli/flags.hpp"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <utility>

namespace chock::cli {

Check Check::one_of(std::initializer_list<const char*> names) {
  return Check(std::make_shared<const CLI::Validator>(CLI::IsMember(std::vector<const char*>(names))));
}

Check Check::range(int min, int max) {
  return Check(std::make_shared<const CLI::Validator>(CLI::Range(min, max)));
}

Check Check::range(long long min, long long max) {
  return Check(std::make_shared<const CLI::Validator>(CLI::Range(min, max)));
}

Check Check::non_negative() {
  return Check(std::make_shared<const CLI::Validator>(CLI::NonNegativeNumber));
}

Check Check::positive_seconds() {
  return Check(std::make_shared<const CLI::Validator>(
      [](const std::string& text) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (text.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v <= 0)
          return "expected a number of seconds above 0, not '" + text + "'";
        return {};
      },
      "SECONDS"));
}

Check Check::custom(std::function<std::string(const std::string&)> test) {
  return Check(std::make_shared<const CLI::Validator>(
      [test = std::move(test)](std::string& value) { return test(value); }, ""));
}

Flag Flag::required() {
  return Flag(option_->required());
}
Flag Flag::check(const Check& check) {
  return Flag(option_->check(*check.validator_));
}
Flag Flag::type_name(const std::string& name) {
  return Flag(option_->type_name(name));
}
Flag Flag::type_size(int size) {
  return Flag(option_->type_size(size));
}
Flag Flag::expected(int count) {
  return Flag(option_->expected(count));
}
Flag Flag::take_all() {
  return Flag(option_->multi_option_policy(CLI::MultiOptionPolicy::TakeAll));
}
Flag Flag::trigger_on_parse() {
  return Flag(option_->trigger_on_parse());
}
Flag Flag::excludes(Flag other) {
  return Flag(option_->excludes(other.option_));
}

Command Command::add_subcommand(const std::string& name, const std::string& description) {
  return Command(*app_->add_subcommand(name, description));
}

template <typename T>
Flag Command::add_option(const std::string& name, T& into, const std::string& description) {
  return Flag(app_->add_option(name, into, description));
}
template Flag Command::add_option(const std::string&, std::string&, const std::string&);
template Flag Command::add_option(const std::string&, std::vector<std::string>&, const std::string&);
template Flag Command::add_option(const std::string&, double&, const std::string&);
template Flag Command::add_option(const std::string&, unsigned&, const std::string&);
template Flag Command::add_option(const std::string&, std::uint16_t&, const std::string&);
template Flag Command::add_option(const std::string&, std::uint64_t&, const std::string&);
template Flag Command::add_option(const std::string&, long long&, const std::string&);
template Flag Command::add_option(const std::string&, std::optional<int>&, const std::string&);

template <typename T>
Flag Command::add_option_function(const std::string& name, std::function<void(const T&)> on_value,
                                  const std::string& description) {
  return Flag(app_->add_option_function<T>(name, std::move(on_value), description));
}
template Flag Command::add_option_function(const std::string&, std::function<void(const std::string&)>,
                                           const std::string&);
template Flag Command::add_option_function(const std::string&, std::function<void(const double&)>,
                                           const std::string&);

Flag Command::add_flag(const std::string& name, bool& into, const std::string& description) {
  return Flag(app_->add_flag(name, into, description));
}

Flag Command::get_option(const std::string& name) {
  return Flag(app_->get_option(name));
}

Command Command::require_subcommand(int count) {
  return Command(*app_->require_subcommand(count));
}
Command Command::positionals_at_end() {
  return Command(*app_->positionals_at_end());
}
Command Command::group(const std::string& name) {
  return Command(*app_->group(name));
}
void Command::callback(std::function<void()> run) {
  app_->callback(std::move(run));
}
void Command::final_callback(std::function<void()> run) {
  app_->final_callback(std::move(run));
}
bool Command::parsed() const {
  return app_->parsed();
}
bool Command::subcommand_given() const {
  return !app_->get_subcommands().empty();
}

}  // namespace chock::cli
