// What a tool call writes to the person's terminal, filtered byte by byte
// (issue 54, class 2). Passed: text, UTF-8, the ordinary C0 controls, SGR,
// cursor movement, erasing, scroll regions, charset designation, keypad mode
// and the DEC private modes of screens and cursors (and mouse, focus and
// bracketed paste, which are put back at the end). Dropped: every OSC but the
// numbers allowed, DCS, SOS, PM, APC, C1 controls in any encoding, ENQ, and
// every sequence a terminal answers (device attributes, status and cursor
// reports, window operations and reports, DECRQM, XTVERSION...) or that
// changes it beyond the call (tab stops, resets, 8-bit controls, key
// modifiers). A sequence split across reads is decided as a whole.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>

namespace chock {

class TerminalFilter {
 public:
  struct Options {
    std::set<int> allowed_osc;  // OSC numbers passed (e.g. 8, hyperlinks); none by default
  };

  TerminalFilter() = default;
  explicit TerminalFilter(Options options) : options_(std::move(options)) {}

  // Appends to `out` what of `in` may reach the terminal. Bytes of a
  // sequence not yet complete are held until it is.
  void feed(std::string_view in, std::string& out);
  // At the call's end: what puts the terminal's modes back where the call
  // left them changed (alternate screen, cursor, keypad, mouse, paste,
  // colours, charset, scroll region). A sequence left unfinished is dropped.
  [[nodiscard]] std::string finish();

 private:
  enum class State : std::uint8_t {
    ground,
    utf8,
    escape,
    escape_charset,
    escape_other,
    csi,
    osc,
    drop_string
  };

  void ground(unsigned char c, std::string& out);
  void escape(unsigned char c, std::string& out);
  void csi(unsigned char c, std::string& out);
  void osc(unsigned char c, std::string& out);
  void control(unsigned char c, std::string& out);  // a C0 control met anywhere
  void end_csi(std::string& out);
  void end_osc(std::string& out);
  bool osc_utf8_ok(unsigned char c);
  bool private_modes(std::string_view params, char final, std::string& out);

  Options options_;
  State state_ = State::ground;
  std::string seq_;                                   // the sequence being read (CSI, allowed OSC, UTF-8)
  int utf8_left_ = 0;                                 // continuation bytes still to come
  unsigned char utf8_low_ = 0x80, utf8_high_ = 0xBF;  // the next continuation byte's range
  bool osc_number_done_ = false;
  bool osc_passing_ = false;
  int osc_utf8_left_ = 0;       // continuation bytes an allowed OSC's text still owes
  bool osc_after_c2_ = false;   // the last lead byte was 0xC2: a C1 control would follow
  bool string_escape_ = false;  // an ESC inside a string: ST, or the end of it
  bool too_long_ = false;       // the sequence ran past its limit: dropped
  // What the call changed, for finish(): DEC private mode -> last set.
  std::map<int, bool> modes_;
  bool keypad_ = false, sgr_ = false, region_ = false, insert_ = false;
  bool g0_special_ = false, shifted_ = false;  // line drawing (ESC ( 0) or SO left in place
};

}  // namespace chock
