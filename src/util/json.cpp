#include "util/json.hpp"

#include <string>

namespace chock {

namespace {

// A first pass that builds nothing: it counts the depth and stops at the
// first level past the limit, so the value is only made when it is shallow.
class DepthCheck final : public nlohmann::json_sax<nlohmann::json> {
 public:
  explicit DepthCheck(std::size_t max_depth) : max_(max_depth) {}
  bool null() override { return true; }
  bool boolean(bool /*unused*/) override { return true; }
  bool number_integer(number_integer_t /*unused*/) override { return true; }
  bool number_unsigned(number_unsigned_t /*unused*/) override { return true; }
  bool number_float(number_float_t /*unused*/, const string_t& /*unused*/) override { return true; }
  bool string(string_t& /*unused*/) override { return true; }
  bool binary(binary_t& /*unused*/) override { return true; }
  bool key(string_t& /*unused*/) override { return true; }
  bool start_object(std::size_t /*unused*/) override { return enter(); }
  bool end_object() override { return leave(); }
  bool start_array(std::size_t /*unused*/) override { return enter(); }
  bool end_array() override { return leave(); }
  bool parse_error(std::size_t /*unused*/, const std::string& /*unused*/,
                   const nlohmann::json::exception& /*unused*/) override {
    return false;
  }
  [[nodiscard]] bool too_deep() const { return too_deep_; }

 private:
  bool enter() {
    if (++depth_ > max_) too_deep_ = true;
    return !too_deep_;
  }
  bool leave() {
    --depth_;
    return true;
  }
  std::size_t max_;
  std::size_t depth_ = 0;
  bool too_deep_ = false;
};

}  // namespace

Expected<nlohmann::json> parse_json(std::string_view text, std::size_t max_depth) {
  DepthCheck check(max_depth);
  const bool ok = nlohmann::json::sax_parse(text, &check, nlohmann::json::input_format_t::json, true, false);
  if (check.too_deep())
    return Error{"JSON nested deeper than " + std::to_string(max_depth) + " levels", "", 0,
                 Errc::hostile_content};
  if (!ok) return Error{"not JSON", "", 0};
  nlohmann::json value = nlohmann::json::parse(text, nullptr, false);
  if (value.is_discarded()) return Error{"not JSON", "", 0};
  return value;
}

}  // namespace chock
