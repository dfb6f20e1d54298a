#include "util/terminal_filter.hpp"

#include <algorithm>
#include <charconv>

namespace chock {

namespace {

constexpr unsigned char kEsc = 0x1B;
constexpr std::size_t kMaxCsi = 64;              // longer than any a program needs: dropped
constexpr std::size_t kMaxOsc = 8192;            // an allowed OSC 8's URI fits
constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD, for a broken UTF-8 sequence

// The DEC private modes a call may set, and each one's value in a terminal
// at a shell prompt (what finish() puts back). Mouse, focus and bracketed
// paste pass so programs behave, and are turned off at the end.
struct Mode {
  int number;
  bool normal;
  bool restored;
};
constexpr Mode kModes[] = {
    {1, false, true},    {7, true, true},     {12, false, false},   {25, true, true},
    {47, false, true},   {1047, false, true}, {1048, false, false}, {1049, false, true},
    {1000, false, true}, {1002, false, true}, {1003, false, true},  {1004, false, true},
    {1005, false, true}, {1006, false, true}, {1015, false, true},  {2004, false, true},
};

const Mode* find_mode(int number) {
  for (const Mode& m : kModes)
    if (m.number == number) return &m;
  return nullptr;
}

bool only(std::string_view s, std::string_view allowed) {
  return s.find_first_not_of(allowed) == std::string_view::npos;
}

// The C0 controls ordinary output uses: BEL, BS, HT, LF, VT, FF, CR, SO, SI.
bool ordinary_control(unsigned char c) {
  return c >= 0x07 && c <= 0x0F;
}

}  // namespace

void TerminalFilter::feed(std::string_view in, std::string& out) {
  for (char ch : in) {
    const auto c = static_cast<unsigned char>(ch);
    switch (state_) {
      case State::ground:
        ground(c, out);
        break;
      case State::utf8:
        if (c >= utf8_low_ && c <= utf8_high_) {
          seq_.push_back(static_cast<char>(c));
          utf8_low_ = 0x80;
          utf8_high_ = 0xBF;
          if (--utf8_left_ > 0) break;
          state_ = State::ground;
          // U+0080-U+009F encoded: a C1 control some terminals obey (CSI, OSC...).
          const bool c1 = static_cast<unsigned char>(seq_[0]) == 0xC2 && c <= 0x9F;
          if (!c1) out += seq_;
        } else {
          // Broken: shown as one U+FFFD, so its bytes are never read as 8-bit controls.
          out += kReplacement;
          state_ = State::ground;
          ground(c, out);
        }
        break;
      case State::escape:
        escape(c, out);
        break;
      case State::escape_charset:
      case State::escape_other:
        if (c < 0x20) {
          control(c, out);
        } else if (c <= 0x2F) {
          state_ = State::escape_other;  // ESC ( % 5 and the like: not needed, dropped
        } else if (c <= 0x7E) {
          if (state_ == State::escape_charset) {
            seq_.push_back(static_cast<char>(c));
            out += seq_;
            if (seq_[1] == '(') g0_special_ = c != 'B';  // G0 is the set shown unless shifted out
          }
          state_ = State::ground;
        } else if (c >= 0x80) {
          state_ = State::ground;
          ground(c, out);
        }
        break;
      case State::csi:
        csi(c, out);
        break;
      case State::osc:
      case State::drop_string:
        osc(c, out);
        break;
    }
  }
}

void TerminalFilter::control(unsigned char c, std::string& out) {
  if (c == kEsc) {
    seq_.clear();
    state_ = State::escape;
  } else if (c == 0x18 || c == 0x1A) {  // CAN, SUB: the sequence is abandoned
    state_ = State::ground;
  } else if (ordinary_control(c)) {
    out.push_back(static_cast<char>(c));
    if (c == 0x0E || c == 0x0F) shifted_ = c == 0x0E;  // SO: the G1 set until SI
  }
  // The rest (ENQ, which a terminal answers, NUL, DC1...) are dropped.
}

void TerminalFilter::ground(unsigned char c, std::string& out) {
  if (c < 0x20) return control(c, out);
  if (c == 0x7F) return;
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
    return;
  }
  utf8_low_ = 0x80;
  utf8_high_ = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    utf8_left_ = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    utf8_left_ = 2;
    if (c == 0xE0) utf8_low_ = 0xA0;   // no overlong forms
    if (c == 0xED) utf8_high_ = 0x9F;  // no surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    utf8_left_ = 3;
    if (c == 0xF0) utf8_low_ = 0x90;
    if (c == 0xF4) utf8_high_ = 0x8F;
  } else {
    // Not UTF-8. 0x80-0x9F alone are the 8-bit C1 controls: dropped. The
    // rest a terminal shows as a character.
    if (c >= 0xA0) out.push_back(static_cast<char>(c));
    return;
  }
  seq_.assign(1, static_cast<char>(c));
  state_ = State::utf8;
}

void TerminalFilter::escape(unsigned char c, std::string& out) {
  const auto pass = [&] {
    out.push_back(static_cast<char>(kEsc));
    out.push_back(static_cast<char>(c));
    state_ = State::ground;
  };
  too_long_ = false;
  switch (c) {
    case '[':
      seq_ = "\x1b[";
      state_ = State::csi;
      return;
    case ']':
      seq_ = "\x1b]";
      osc_number_done_ = false;
      osc_passing_ = false;
      osc_utf8_left_ = 0;
      osc_after_c2_ = false;
      string_escape_ = false;
      state_ = State::osc;
      return;
    case 'P':  // DCS (DECRQSS, XTGETTCAP, sixel...)
    case 'X':  // SOS
    case '^':  // PM
    case '_':  // APC
      string_escape_ = false;
      state_ = State::drop_string;
      return;
    case '=':  // keypad application mode, put back at the end
      keypad_ = true;
      return pass();
    case '>':
      keypad_ = false;
      return pass();
    case '7':  // save and restore the cursor
    case '8':
    case 'D':  // index, next line, reverse index: scrolling, as less does
    case 'E':
    case 'M':
      return pass();
    case '(':
    case ')':
    case '*':
    case '+':
      seq_ = {static_cast<char>(kEsc), static_cast<char>(c)};
      state_ = State::escape_charset;
      return;
    default:
      break;
  }
  if (c < 0x20) return control(c, out);  // executed; ESC stays pending (or starts anew)
  if (c == 0x7F) return;
  if (c <= 0x2F) {
    state_ = State::escape_other;  // ESC SP F (7/8-bit controls), ESC # 8...: dropped
    return;
  }
  // ESC c (reset), ESC Z (DECID, answered), ESC H (tab stop), ESC N/O...: dropped.
  state_ = State::ground;
  if (c >= 0x80) ground(c, out);
}

void TerminalFilter::csi(unsigned char c, std::string& out) {
  if (c < 0x20) return control(c, out);  // executed inside, as a terminal does
  if (c == 0x7F) return;
  if (c >= 0x80) {  // not part of any CSI: the sequence is abandoned
    state_ = State::ground;
    return ground(c, out);
  }
  if (seq_.size() >= kMaxCsi) {
    too_long_ = true;
  } else {
    seq_.push_back(static_cast<char>(c));
  }
  if (c >= 0x40) {
    state_ = State::ground;
    if (!too_long_) end_csi(out);
  }
}

void TerminalFilter::end_csi(std::string& out) {
  const char final = seq_.back();
  std::string_view params = std::string_view(seq_).substr(2, seq_.size() - 3);
  char prefix = 0;
  if (!params.empty() && std::string_view("<=>?").find(params.front()) != std::string_view::npos) {
    prefix = params.front();
    params.remove_prefix(1);
  }
  // Intermediates (CSI ! p, CSI ? $ p, CSI SP q) and stray prefixes are never needed.
  if (!only(params, "0123456789;:")) return;
  if (prefix == '?') {
    if (final == 'h' || final == 'l') private_modes(params, final, out);
    return;  // CSI ? n (status), CSI ? u (keyboard query), CSI ? ... S (graphics query)...
  }
  if (prefix != 0) return;  // CSI > c, CSI > q (XTVERSION), CSI > 4 m (key modifiers), CSI = c...
  const bool numbers = only(params, "0123456789;");
  switch (final) {
    case 'm':  // SGR: colours may use ':' (38:2::r:g:b)
      out += seq_;
      sgr_ = !(params.empty() || params == "0");
      return;
    case 'A':
    case 'B':
    case 'C':
    case 'D':
    case 'E':
    case 'F':
    case 'G':
    case 'H':
    case 'f':
    case 'd':
    case 'e':
    case 'a':
    case '`':
    case 'I':
    case 'Z':  // cursor movement
    case 'K':
    case 'X':
    case 'P':
    case '@':
    case 'L':
    case 'M':  // erasing, inserting
    case 'S':
    case 'b':  // scrolling, repeating
      if (numbers) out += seq_;
      return;
    case 'J':  // 3 J would erase the person's scrollback from before the call
      if (params.empty() || params == "0" || params == "1" || params == "2") out += seq_;
      return;
    case 'T':  // with 5 parameters it starts highlight mouse tracking, which answers
      if (numbers && params.find(';') == std::string_view::npos) out += seq_;
      return;
    case 's':  // save and restore the cursor (with parameters: margins)
    case 'u':
      if (params.empty()) out += seq_;
      return;
    case 'r':  // scroll region, put back at the end
      if (!numbers) return;
      out += seq_;
      region_ = !(params.empty() || params == "0");
      return;
    case 'h':  // ANSI modes: only insert mode, put back at the end
    case 'l':
      if (params != "4") return;
      out += seq_;
      insert_ = final == 'h';
      return;
    default:
      // CSI c (device attributes), CSI n (status, cursor position), CSI t
      // (window operations and reports), CSI x, CSI g (tab stops)...
      return;
  }
}

bool TerminalFilter::private_modes(std::string_view params, char final, std::string& out) {
  if (!only(params, "0123456789;")) return false;
  std::string kept;
  while (!params.empty()) {
    const auto semi = params.find(';');
    const std::string_view one = params.substr(0, semi);
    params.remove_prefix(semi == std::string_view::npos ? params.size() : semi + 1);
    int number = 0;
    const auto [end, ec] = std::from_chars(one.data(), one.data() + one.size(), number);
    if (one.empty() || ec != std::errc() || end != one.data() + one.size() || find_mode(number) == nullptr)
      continue;
    modes_[number] = final == 'h';
    kept += (kept.empty() ? "" : ";") + std::string(one);
  }
  if (kept.empty()) return false;
  out += "\x1b[?" + kept + final;
  return true;
}

void TerminalFilter::osc(unsigned char c, std::string& out) {
  if (string_escape_) {
    // ESC ends the string: ESC \ is its terminator, any other is a new escape.
    string_escape_ = false;
    const bool was_osc = state_ == State::osc;
    state_ = State::ground;
    if (was_osc) {
      end_osc(out);
      if (osc_passing_) out += "\x1b\\";
      osc_passing_ = false;
    }
    if (c != '\\') escape(c, out);
    return;
  }
  if (c == kEsc) {
    string_escape_ = true;
    return;
  }
  if (c == 0x18 || c == 0x1A) {
    state_ = State::ground;
    return;
  }
  if (state_ == State::drop_string) return;
  if (c == 0x07) {
    end_osc(out);
    if (osc_passing_) out.push_back('\a');
    osc_passing_ = false;
    state_ = State::ground;
    return;
  }
  if (c < 0x20) return;
  if (!osc_number_done_) {
    if (c >= '0' && c <= '9' && seq_.size() < 8) {
      seq_.push_back(static_cast<char>(c));
      return;
    }
    osc_number_done_ = true;
    int number = -1;
    const auto [end, ec] = std::from_chars(seq_.data() + 2, seq_.data() + seq_.size(), number);
    osc_passing_ = c == ';' && ec == std::errc() && end == seq_.data() + seq_.size() &&
                   options_.allowed_osc.count(number) != 0;
  }
  if (!osc_passing_) return;
  // A C1 control inside an allowed OSC (raw, or as UTF-8 after 0xC2) would
  // end it early on a terminal that obeys C1, and start what the call wants
  // (an OSC 52 after an OSC 8): the whole sequence is dropped. A byte of
  // 0x80-0x9F is passed only as the continuation of another character.
  if (seq_.size() >= kMaxOsc || !osc_utf8_ok(c)) {
    osc_passing_ = false;
    return;
  }
  seq_.push_back(static_cast<char>(c));
}

// Whether `c` continues well-formed UTF-8 with no C1 control (U+0080-U+009F)
// in an allowed OSC's text.
bool TerminalFilter::osc_utf8_ok(unsigned char c) {
  if (osc_utf8_left_ > 0) {
    if (c < 0x80 || c > 0xBF || (osc_after_c2_ && c <= 0x9F)) return false;
    --osc_utf8_left_;
    osc_after_c2_ = false;
    return true;
  }
  if (c < 0x80) return true;
  osc_after_c2_ = c == 0xC2;
  if (c >= 0xC2 && c <= 0xDF)
    osc_utf8_left_ = 1;
  else if (c >= 0xE0 && c <= 0xEF)
    osc_utf8_left_ = 2;
  else if (c >= 0xF0 && c <= 0xF4)
    osc_utf8_left_ = 3;
  else
    return false;  // a raw C1, a stray continuation or no lead byte at all
  return true;
}

// At the OSC's terminator: an allowed one is written, the terminator after it.
void TerminalFilter::end_osc(std::string& out) {
  if (!osc_number_done_) {  // ESC ] 104 BEL: a number alone
    int number = -1;
    const auto [end, ec] = std::from_chars(seq_.data() + 2, seq_.data() + seq_.size(), number);
    osc_passing_ =
        ec == std::errc() && end == seq_.data() + seq_.size() && options_.allowed_osc.count(number) != 0;
    osc_number_done_ = true;
  }
  // A parameter that is "?" asks the terminal to answer (OSC 10;? for a
  // colour): never passed, whatever the number.
  const std::string_view body(seq_);
  for (std::size_t at = body.find(";?"); osc_passing_ && at != std::string_view::npos;
       at = body.find(";?", at + 1))
    if (at + 2 == body.size() || body[at + 2] == ';') osc_passing_ = false;
  if (osc_passing_) out += seq_;
}

std::string TerminalFilter::finish() {
  state_ = State::ground;
  seq_.clear();
  std::string out;
  // The alternate screen first: leaving it shows the person's own again.
  for (int screen : {1049, 1047, 47})
    if (auto m = modes_.find(screen); m != modes_.end() && m->second)
      out += "\x1b[?" + std::to_string(screen) + "l";
  for (const auto& [number, on] : modes_) {
    const Mode* m = find_mode(number);
    if (number == 1049 || number == 1047 || number == 47 || !m->restored || on == m->normal) continue;
    out += "\x1b[?" + std::to_string(number) + (m->normal ? "h" : "l");
  }
  if (keypad_) out += "\x1b>";
  if (insert_) out += "\x1b[4l";
  if (region_)
    out +=
        "\x1b"
        "7\x1b[r\x1b"
        "8";  // the region's reset homes the cursor: saved around it
  if (g0_special_ || shifted_) out += "\x0f\x1b(B";
  if (sgr_) out += "\x1b[m";
  modes_.clear();
  keypad_ = sgr_ = g0_special_ = shifted_ = region_ = insert_ = false;
  return out;
}

}  // namespace chock
