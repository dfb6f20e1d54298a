// What a call writes to the person's terminal (issue 54, class 2): ordinary
// output passes byte for byte, every sequence that makes the terminal answer,
// writes its clipboard or title, or outlives the call does not, however the
// bytes are split across reads.
#include <gtest/gtest.h>

#include <string>

#include "util/terminal_filter.hpp"

namespace chock {
namespace {

// `in` fed whole, and fed in every split into two reads and byte by byte;
// each must give the same bytes, which are returned.
std::string filtered(const std::string& in, const TerminalFilter::Options& options = {}) {
  std::string whole;
  TerminalFilter f(options);
  f.feed(in, whole);
  for (std::size_t cut = 0; cut <= in.size(); ++cut) {
    TerminalFilter g(options);
    std::string out;
    g.feed(std::string_view(in).substr(0, cut), out);
    g.feed(std::string_view(in).substr(cut), out);
    EXPECT_EQ(out, whole) << "split at " << cut;
  }
  TerminalFilter h(options);
  std::string bytewise;
  for (char c : in) h.feed(std::string_view(&c, 1), bytewise);
  EXPECT_EQ(bytewise, whole) << "byte by byte";
  return whole;
}

void expect_passes(const std::string& seq) {
  EXPECT_EQ(filtered("a" + seq + "b"), "a" + seq + "b");
}

void expect_dropped(const std::string& seq) {
  EXPECT_EQ(filtered("a" + seq + "b"), "ab");
}

TEST(TerminalFilter, TextUtf8AndOrdinaryControlsPassAsTheyAre) {
  expect_passes("plain text 123 ~!@#$%^&*()");
  expect_passes("\n\r\t\b\a\v\f");
  expect_passes("caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80 \xe4\xb8\xad");  // 2, 3 and 4 bytes
}

TEST(TerminalFilter, Utf8SplitAcrossReadsPassesWhole) {
  std::string out;
  TerminalFilter f;
  f.feed("\xf0\x9f", out);
  EXPECT_EQ(out, "");
  f.feed("\x98\x80!", out);
  EXPECT_EQ(out, "\xf0\x9f\x98\x80!");
}

TEST(TerminalFilter, ColoursCursorMovementAndErasingPass) {
  for (const char* seq : {"\x1b[m",
                          "\x1b[0m",
                          "\x1b[1;31m",
                          "\x1b[38;5;196m",
                          "\x1b[38:2::255:0:0m",
                          "\x1b[48;2;1;2;3m",
                          "\x1b[A",
                          "\x1b[3B",
                          "\x1b[12C",
                          "\x1b[D",
                          "\x1b[2E",
                          "\x1b[F",
                          "\x1b[5G",
                          "\x1b[H",
                          "\x1b[10;20H",
                          "\x1b[3;4f",
                          "\x1b[7d",
                          "\x1b[K",
                          "\x1b[2K",
                          "\x1b[J",
                          "\x1b[2J",
                          "\x1b[3X",
                          "\x1b[2P",
                          "\x1b[4@",
                          "\x1b[L",
                          "\x1b[2M",
                          "\x1b[S",
                          "\x1b[2T",
                          "\x1b[1;24r",
                          "\x1b[r",
                          "\x1b[s",
                          "\x1b[u",
                          "\x1b"
                          "7",
                          "\x1b"
                          "8",
                          "\x1bM",
                          "\x1b"
                          "D",
                          "\x1b"
                          "E",
                          "\x1b(0",
                          "\x1b(B",
                          "\x0e",
                          "\x0f"})
    expect_passes(seq);
}

TEST(TerminalFilter, ScreenCursorAndKeypadModesPass) {
  for (const char* seq :
       {"\x1b[?1h", "\x1b[?1l", "\x1b[?25l", "\x1b[?25h", "\x1b[?7l", "\x1b[?7h", "\x1b[?12h", "\x1b[?47h",
        "\x1b[?1047h", "\x1b[?1048h", "\x1b[?1049h", "\x1b[?1049l", "\x1b=", "\x1b>", "\x1b[?1049;25h"})
    expect_passes(seq);
}

TEST(TerminalFilter, AnOsc52FromTheCallNeverReachesTheClipboard) {
  expect_dropped("\x1b]52;c;aWQgPiAvdG1wL3gK\a");
  expect_dropped("\x1b]52;c;aWQgPiAvdG1wL3gK\x1b\\");
}

TEST(TerminalFilter, EveryOscIsDroppedByDefault) {
  expect_dropped("\x1b]0;title\a");
  expect_dropped("\x1b]2;; id > /tmp/x\x1b\\");
  expect_dropped("\x1b]8;;https://example.org\x1b\\");
  expect_dropped("\x1b]10;?\a");  // colour queries
  expect_dropped("\x1b]104\a");
  expect_dropped("\x1b]1337;File=name=eA==:AAAA\a");
}

TEST(TerminalFilter, AnOscEndedByAnotherEscapeTakesNothingAfterItWithIt) {
  EXPECT_EQ(filtered("a\x1b]0;title\x1b[1mb"), "a\x1b[1mb");
}

TEST(TerminalFilter, AnAllowedOscPassesAndOnlyThatNumber) {
  TerminalFilter::Options hyperlinks;
  hyperlinks.allowed_osc = {8};
  EXPECT_EQ(filtered("\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\", hyperlinks),
            "\x1b]8;;https://example.org\x1b\\link\x1b]8;;\x1b\\");
  EXPECT_EQ(filtered("\x1b]8;;u\a", hyperlinks), "\x1b]8;;u\a");
  EXPECT_EQ(filtered("a\x1b]80;;u\a\x1b]52;c;eA==\ab", hyperlinks), "ab");
  // Its text is UTF-8 without C1 controls: an ST or OSC of C1 inside it would
  // end it early on a terminal that obeys C1 and start an OSC 52.
  EXPECT_EQ(filtered("a\x1b]8;;https://\xc3\xa9.example/\xe2\x80\x93\a", hyperlinks),
            "a\x1b]8;;https://\xc3\xa9.example/\xe2\x80\x93\a");
  EXPECT_EQ(filtered("a\x1b]8;;\xc2\x9c\xc2\x9d"
                     "52;c;aWQK\ab",
                     hyperlinks),
            "ab");
  EXPECT_EQ(filtered("a\x1b]8;;\xc3\xa9\x9c\x9d"
                     "52;c;aWQK\ab",
                     hyperlinks),
            "ab");
  // A parameter that is "?" makes the terminal answer: dropped, though allowed.
  TerminalFilter::Options colours;
  colours.allowed_osc = {10, 8};
  EXPECT_EQ(filtered("a\x1b]10;?\ab\x1b]10;?;x\ac", colours), "abc");
  EXPECT_EQ(filtered("\x1b]8;;https://e.org/?q=1\a", colours), "\x1b]8;;https://e.org/?q=1\a");
}

TEST(TerminalFilter, DcsApcPmAndSosNeverReachTheTerminal) {
  expect_dropped("\x1bP$qm\x1b\\");              // DECRQSS, which the terminal answers
  expect_dropped("\x1bP+q544e\x1b\\");           // XTGETTCAP
  expect_dropped("\x1bPq#0;2;0;0;0#0~~\x1b\\");  // sixel
  expect_dropped("\x1b_Gf=100;AAAA\x1b\\");      // kitty graphics (APC)
  expect_dropped("\x1b^private\x1b\\");
  expect_dropped("\x1bXstring\a more\x1b\\");  // BEL does not end SOS
}

TEST(TerminalFilter, NoSequenceThatMakesTheTerminalAnswerPasses) {
  for (const char* seq :
       {"\x05",                                                               // ENQ: answerback
        "\x1b[c",       "\x1b[0c",  "\x1b[>c",  "\x1b[>0c",   "\x1b[=c",      // device attributes
        "\x1b[5n",      "\x1b[6n",  "\x1b[?6n", "\x1b[?15n",                  // status, cursor
        "\x1b[21t",     "\x1b[14t", "\x1b[18t", "\x1b[13t",   "\x1b[8;1;1t",  // window
        "\x1b[?2004$p", "\x1b[4$p", "\x1b[>q",  "\x1b[>0q",                   // DECRQM, XTVERSION
        "\x1b[?u",      "\x1b[x",   "\x1bZ",    "\x1b[?1;2S", "\x1b[1;2;3;4;5T"})
    expect_dropped(seq);
}

TEST(TerminalFilter, ModesThatWouldOutliveTheCallAreDroppedOrPutBack) {
  // Dropped: resets, tab stops, 8-bit answers, key modifiers, scrollback erase.
  for (const char* seq :
       {"\x1b"
        "c",
        "\x1b[!p", "\x1bH", "\x1b[3g", "\x1b G", "\x1b[>4;2m", "\x1b[>1u", "\x1b[=1u", "\x1b[3J", "\x1b[?9h",
        "\x1b[?1001h", "\x1b[?2026h", "\x1b[2 q", "\x1b[20h", "\x1b#8"})
    expect_dropped(seq);
  // Passed, and put back by finish().
  TerminalFilter f;
  std::string out;
  f.feed("\x1b[?2004h\x1b[?1000;1006h\x1b[?1004h\x1b[?1049h\x1b[?25l\x1b=\x1b[31m\x1b[4h\x1b(0", out);
  EXPECT_EQ(out, "\x1b[?2004h\x1b[?1000;1006h\x1b[?1004h\x1b[?1049h\x1b[?25l\x1b=\x1b[31m\x1b[4h\x1b(0");
  EXPECT_EQ(f.finish(),
            "\x1b[?1049l\x1b[?25h\x1b[?1000l\x1b[?1004l\x1b[?1006l\x1b[?2004l\x1b>\x1b[4l\x0f\x1b(B\x1b[m");
  EXPECT_EQ(f.finish(), "");
}

TEST(TerminalFilter, AModeTheCallPutBackItselfIsNotPutBackAgain) {
  TerminalFilter f;
  std::string out;
  f.feed("\x1b[?1049h\x1b[?25l\x1b=\x1b[1mx\x1b[0m\x1b>\x1b[?25h\x1b[?1049l\x1b(0q\x1b(B\x0eq\x0f", out);
  EXPECT_EQ(f.finish(), "");
}

TEST(TerminalFilter, AScrollRegionIsResetWithTheCursorKept) {
  TerminalFilter f;
  std::string out;
  f.feed("\x1b[2;10r", out);
  EXPECT_EQ(f.finish(),
            "\x1b"
            "7\x1b[r\x1b"
            "8");
}

TEST(TerminalFilter, UnwantedModesAreTakenOutOfAMixedSequence) {
  EXPECT_EQ(filtered("\x1b[?1049;9;2004;1001h"), "\x1b[?1049;2004h");
}

TEST(TerminalFilter, C1ControlsInEveryEncodingAreDropped) {
  EXPECT_EQ(filtered("a\x9b"
                     "6nb"),
            "a6nb");  // 8-bit CSI: only its parameters remain, as text
  EXPECT_EQ(filtered("a\xc2\x9b"
                     "6nb"),
            "a6nb");  // CSI as UTF-8 (U+009B)
  EXPECT_EQ(filtered("a\xc2\x9d"
                     "52;c;eA==\ab"),
            "a52;c;eA==\ab");
  // A broken sequence becomes U+FFFD: its continuation bytes never stand alone.
  EXPECT_EQ(filtered("a\xe2\x9b"
                     "6n"),
            "a\xef\xbf\xbd"
            "6n");
  EXPECT_EQ(filtered("\xe0\x9b"
                     "6n"),
            "\xef\xbf\xbd"
            "6n");  // overlong: E0 needs A0 or more
  EXPECT_EQ(filtered("\xc3\x1b[6n!"), "\xef\xbf\xbd!");
  EXPECT_EQ(filtered("\xe9t\xe9"), "\xef\xbf\xbdt");  // Latin-1: the last one still waits
}

TEST(TerminalFilter, ASequenceSplitAcrossReadsIsDecidedWhole) {
  TerminalFilter f;
  std::string out;
  for (const char* part : {"x\x1b", "]5", "2;c;eA", "==\x1b", "\\y\x1b[", "6", "n\x1b[3", "1mz"})
    f.feed(part, out);
  EXPECT_EQ(out, "xy\x1b[31mz");
}

TEST(TerminalFilter, CancelAndControlsInsideASequence) {
  EXPECT_EQ(filtered("a\x1b[6\x18nb"), "anb");        // CAN abandons the sequence
  EXPECT_EQ(filtered("a\x1b[1\nAb"), "a\n\x1b[1Ab");  // a control inside is executed
  EXPECT_EQ(filtered("a\x1b[\x1b[6nb"), "ab");        // ESC starts anew
  EXPECT_EQ(filtered("a\x1bP1$r\x1b[6nb"), "ab");     // a DCS ended by ESC [ ...: that CSI decided on its own
  EXPECT_EQ(filtered("\x1b[" + std::string(100, '1') + "m"), "");  // longer than any needs
}

TEST(TerminalFilter, AnUnfinishedSequenceAtTheEndIsDropped) {
  TerminalFilter f;
  std::string out;
  f.feed("ok\x1b]52;c;eA==", out);
  EXPECT_EQ(out, "ok");
  EXPECT_EQ(f.finish(), "");
}

}  // namespace
}  // namespace chock
