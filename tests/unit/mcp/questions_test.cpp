// The policy's questions as MCP elicitation (mcp/questions.hpp) and the ask
// channel of a `chock` command run by `chock mcp` (mcp/ask_channel.hpp).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "mcp/ask_channel.hpp"
#include "mcp/questions.hpp"

namespace chock::mcp {
namespace {

const Question kQuestion{"memory.write", "write the note x", "the tool call write_memory (request 3)", true};

Json accepted(const std::string& answer) {
  return {{"action", "accept"}, {"content", {{"answer", answer}}}};
}

TEST(McpQuestion, TheMessageNamesTheActionWhatAndTheToolCall) {
  const Json e = elicitation(kQuestion);
  const std::string message = e["message"];
  for (const char* part : {"memory.write", "write the note x", "the tool call write_memory (request 3)"})
    EXPECT_NE(message.find(part), std::string::npos) << message;
  EXPECT_EQ(e["requestedSchema"]["required"], Json::array({"answer"}));
  EXPECT_EQ(e["requestedSchema"]["properties"]["answer"]["enum"],
            Json::array({"yes", "always for this session", "no"}));
  Question once = kQuestion;
  once.offer_always = false;
  EXPECT_EQ(elicitation(once)["requestedSchema"]["properties"]["answer"]["enum"], Json::array({"yes", "no"}));
}

TEST(McpQuestion, OnlyAnAcceptedYesApproves) {
  EXPECT_TRUE(answer_of(kQuestion, accepted("yes")).approved);
  const session::Answer always = answer_of(kQuestion, accepted("always for this session"));
  EXPECT_TRUE(always.approved && always.always);
  Question once = kQuestion;
  once.offer_always = false;
  EXPECT_FALSE(answer_of(once, accepted("always for this session")).approved);
  for (const Json& no : {accepted("no"), accepted("YES"), Json{{"action", "accept"}},
                         Json{{"action", "accept"}, {"content", {{"answer", true}}}},
                         Json{{"action", "decline"}}, Json{{"action", "cancel"}}, Json("accept"), Json()}) {
    const session::Answer a = answer_of(kQuestion, no);
    EXPECT_FALSE(a.approved) << no.dump();
    EXPECT_NE(a.refusal.find("memory.write"), std::string::npos) << a.refusal;
  }
  EXPECT_FALSE(answer_of(kQuestion, std::nullopt).approved);
}

TEST(McpQuestion, AWithdrawnQuestionTellsTheClientAndIgnoresALateAnswer) {
  std::vector<Json> sent;
  Outgoing out([&sent](const Json& m) { sent.push_back(m); });
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ASSERT_EQ(::write(pipe_fds[1], "x", 1), 1);  // the call is ending
  const session::Answer a = ask_person(out, kQuestion, pipe_fds[0], nullptr);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  EXPECT_FALSE(a.approved);
  ASSERT_EQ(sent.size(), 2U);
  EXPECT_EQ(sent[0]["method"], "elicitation/create");
  EXPECT_EQ(sent[1]["method"], "notifications/cancelled");
  EXPECT_EQ(sent[1]["params"]["requestId"], sent[0]["id"]);
  Message late;
  late.kind = Message::Kind::response;
  late.id = sent[0]["id"];
  late.result = accepted("yes");
  EXPECT_FALSE(out.take(late));
}

TEST(McpQuestion, AnAnswerReachesTheAskerAndAnEndedClientAnswersNo) {
  std::vector<Json> sent;
  std::mutex m;
  Outgoing out([&](const Json& j) {
    std::lock_guard g(m);
    sent.push_back(j);
  });
  std::thread answerer([&] {
    for (int i = 0; i < 500; ++i) {
      {
        std::lock_guard g(m);
        if (!sent.empty()) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Message r;
    r.kind = Message::Kind::response;
    {
      std::lock_guard g(m);
      if (!sent.empty()) r.id = sent[0]["id"];
    }
    r.result = accepted("yes");
    EXPECT_TRUE(out.take(r));
  });
  EXPECT_TRUE(ask_person(out, kQuestion, -1, nullptr).approved);
  answerer.join();
  out.end();
  EXPECT_FALSE(ask_person(out, kQuestion, -1, nullptr).approved);
}

TEST(AskChannel, AQuestionCrossesAndItsAnswerComesBack) {
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
  UniqueFd server(pair[0]), child(pair[1]);
  std::string seen_action, seen_what;
  std::thread serving([&] {
    EXPECT_TRUE(answer_one(server.get(), [&](const std::string& action, const std::string& what, bool, int) {
      seen_action = action;
      seen_what = what;
      return session::Answer{true, true, ""};
    }));
  });
  const std::string long_what(kMaxQuestionBytes + 100, 'w');
  const session::Answer a = ask_over(child.get(), "net.fetch.org.example", long_what, true, -1);
  serving.join();
  EXPECT_TRUE(a.approved && a.always);
  EXPECT_EQ(seen_action, "net.fetch.org.example");
  EXPECT_LT(seen_what.size(), long_what.size());  // cut
  // Not offered: an "always" from the server is not taken.
  std::thread again([&] {
    (void)answer_one(server.get(), [](const std::string&, const std::string&, bool, int) {
      return session::Answer{true, true, ""};
    });
  });
  EXPECT_FALSE(ask_over(child.get(), "workspace.apply", "apply", false, -1).always);
  again.join();
  server.reset();
  const session::Answer gone = ask_over(child.get(), "memory.write", "x", true, -1);
  EXPECT_FALSE(gone.approved);
  EXPECT_NE(gone.refusal.find("memory.write"), std::string::npos) << gone.refusal;
}

TEST(AskChannel, OnlyASeqpacketSocketIsTakenAndTheVariableIsGone) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  ::setenv(kAskChannelVariable, std::to_string(pipe_fds[0]).c_str(), 1);
  EXPECT_FALSE(take_ask_channel());
  EXPECT_EQ(std::getenv(kAskChannelVariable), nullptr);
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair), 0);
  UniqueFd other(pair[1]);
  ::setenv(kAskChannelVariable, std::to_string(pair[0]).c_str(), 1);
  UniqueFd taken = take_ask_channel();
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken.get(), pair[0]);
  EXPECT_EQ(std::getenv(kAskChannelVariable), nullptr);
  EXPECT_FALSE(take_ask_channel());  // taken once
  for (const char* bad : {"1", "-4", "abc", "7x", ""}) {
    ::setenv(kAskChannelVariable, bad, 1);
    EXPECT_FALSE(take_ask_channel()) << bad;
  }
}

}  // namespace
}  // namespace chock::mcp
