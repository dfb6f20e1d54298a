// The terminating relay's request rewriter: a sentinel in a request's head
// becomes its secret; bodies, chunked framing, pipelined requests and an
// upgraded connection's bytes pass exactly as they came, however the bytes
// are split on the wire.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "net/http_rewrite.hpp"

namespace chock::net {
namespace {

const std::string kSentinel = "sk-test-SENTINELsentinel0123";
const std::string kSecret = "sk-test-REALSECRETvalue456789";

std::vector<Swap> swaps() {
  return {{kSentinel, kSecret}};
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  for (auto at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// `in` fed whole, in two parts at every split, and byte by byte: the same output each way.
void expect_rewritten(const std::string& in, const std::string& expected, std::size_t swapped) {
  {
    RequestRewriter r(swaps());
    auto out = r.feed(in);
    ASSERT_TRUE(out) << out.error().message();
    EXPECT_EQ(*out, expected);
    EXPECT_EQ(r.swapped(), swapped);
  }
  for (std::size_t split = 1; split < in.size(); ++split) {
    RequestRewriter r(swaps());
    auto a = r.feed(std::string_view(in).substr(0, split));
    auto b = r.feed(std::string_view(in).substr(split));
    ASSERT_TRUE(a && b) << "split at " << split;
    EXPECT_EQ(*a + *b, expected) << "split at " << split;
  }
  RequestRewriter r(swaps());
  std::string out;
  for (char c : in) {
    auto part = r.feed(std::string_view(&c, 1));
    ASSERT_TRUE(part) << part.error().message();
    out += *part;
  }
  EXPECT_EQ(out, expected);
}

TEST(RequestRewriter, ASentinelInAHeadBecomesTheSecretAndNothingElseChanges) {
  const std::string head = "POST /v1/messages HTTP/1.1\r\nHost: api.example.org\r\nx-api-key: " + kSentinel +
                           "\r\nContent-Length: 40\r\n\r\n";
  const std::string body = "{\"echo\":\"" + kSentinel + "\"}\n";
  ASSERT_EQ(body.size(), 40U);
  expect_rewritten(head + body, replaced(head, kSentinel, kSecret) + body, 1);
}

TEST(RequestRewriter, PipelinedChunkedAndKeptAliveRequestsPassWhole) {
  const std::string first = "POST /a HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer " + kSentinel +
                            "\r\nTransfer-Encoding: chunked\r\n\r\n";
  const std::string chunks =
      "1c\r\n" + kSentinel + "\r\n5\r\nhello\r\n0\r\nX-Trailer: " + kSentinel + "\r\n\r\n";
  const std::string second = "GET /b?key=" + kSentinel + " HTTP/1.1\r\nHost: h\r\n\r\n";
  const std::string third = "PUT /c HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nabcde";
  const std::string in = first + chunks + second + third;
  // Heads are rewritten (the query too: the head goes to the credential's
  // host alone); a body, its chunk framing and its trailer are the call's bytes.
  const std::string expected =
      replaced(first, kSentinel, kSecret) + chunks + replaced(second, kSentinel, kSecret) + third;
  expect_rewritten(in, expected, 2);
}

TEST(RequestRewriter, AnUpgradedConnectionsBytesPassAsTheyCame) {
  const std::string head =
      "GET /ws HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nAuthorization: Bearer " +
      kSentinel + "\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  const std::string frames =
      std::string("\x81\x9c\x01\x02\x03\x04", 6) + kSentinel + "GET / HTTP/1.1\r\n\r\n";
  expect_rewritten(head + frames, replaced(head, kSentinel, kSecret) + frames, 1);
  RequestRewriter r(swaps());
  ASSERT_TRUE(r.feed(head + frames));
  EXPECT_TRUE(r.upgraded());
}

TEST(RequestRewriter, WhatIsNotHttpOrAHeadTooLongEndsTheLink) {
  RequestRewriter garbage(swaps());
  EXPECT_FALSE(garbage.feed(std::string("\x16\x03\x01\x02\x00", 5)));  // a TLS hello where HTTP should be
  RequestRewriter smuggled(swaps());
  auto both = smuggled.feed("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n");
  EXPECT_FALSE(both) << "a request with both lengths was passed";
  RequestRewriter long_head(swaps());
  const std::string start = "GET / HTTP/1.1\r\nX-Long: ";
  auto part = long_head.feed(start + std::string(RequestRewriter::kMaxHead, 'a'));
  ASSERT_FALSE(part);
  EXPECT_NE(part.error().message().find("longer than"), std::string::npos) << part.error().message();
  // The neighbour: a head just under the cap passes.
  RequestRewriter fits(swaps());
  auto ok = fits.feed(start + std::string(RequestRewriter::kMaxHead - start.size() - 8, 'a') + "\r\n\r\n");
  ASSERT_TRUE(ok) << ok.error().message();
}

}  // namespace
}  // namespace chock::net
