// The host side of a filtered call's network: the stub resolver, the relay
// and the broker, served from threads of the caller on sockets that belong
// to the call's network namespace (made there, handed out by SCM_RIGHTS).
// No process of the call holds them.
//
//   stub:   a DNS query -> the judge's name rule -> a synthetic address, or
//           REFUSED (the name is never looked up on the host)
//   relay:  accept -> SO_ORIGINAL_DST -> the synthetic address's name -> the
//           judge (net.connect.<name>.<port>: resolve, check, dial pinned)
//           -> splice both ways with half-close
//   broker: a SOCK_SEQPACKET request "host:port" -> the judge -> a stream
//           (one end of a fresh unix socket pair, never a socket of the
//           host's network namespace) or the bare word "refused"
//
// A call is hostile to these threads too (issue 53): none of them ever
// blocks on a socket of the call (every send is non-blocking, the broker's
// unread answers are bounded), no descriptor a call sends is ever kept
// (SCM_RIGHTS is refused on every unix socket the call can write to, and
// whatever still arrives is closed at once), a write to a socket the call
// closed raises no SIGPIPE (blocked in each thread: splice has no
// MSG_NOSIGNAL), and stop() ends every thread and closes every socket.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "chock/net.hpp"
#include "net/dns_stub.hpp"
#include "util/fd.hpp"

namespace chock::net {

struct RelaySockets {
  UniqueFd stub;    // UDP, bound to the stub's address inside the call
  UniqueFd relay4;  // TCP listeners inside the call, where the ruleset redirects
  UniqueFd relay6;  // (may be absent: no IPv6)
  UniqueFd broker;  // the host's end of the broker's SOCK_SEQPACKET pair
};

class Relay {
 public:
  static constexpr int kMaxLinks = 512;
  // Lines of refusals kept (and events recorded for refused names); past it
  // they are counted.
  static constexpr std::size_t kMaxRefusals = 64;
  // Answers of the broker the call has not read, kept beyond what its socket
  // holds; past it the call loses its broker (said in a line).
  static constexpr std::size_t kMaxUnreadAnswers = 64;

  Relay(std::shared_ptr<Judge> judge, RelaySockets sockets);
  ~Relay();
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Ends every link, joins every thread and closes every socket; idempotent.
  void stop() noexcept;
  // Chock's lines for what was refused, one per host and reason, in order.
  [[nodiscard]] std::vector<std::string> refusals() const;

 private:
  void serve();
  // A refusal's line, the first time it is made, to JudgeOptions::refused.
  void tell(const std::string& line) const;
  void answer_queries();
  void accept_links(int listener);
  void serve_broker();
  void link(UniqueFd inside);
  struct Answer;
  Answer answer(const std::string& request);
  // Sends what it can of `unread` without waiting; false when the broker is
  // broken (the call closed it).
  bool send_answers(std::list<Answer>& unread);
  void refuse(const std::string& line);
  // Under mutex_: false when the line is there already or past kMaxRefusals.
  bool add_refusal(const std::string& line);
  // Runs `body` on a thread of its own, joined by the next start_link once
  // it has ended, or by stop(); false past kMaxLinks.
  bool start_link(std::function<void()> body);
  // Under mutex_: the threads of links that have ended, to be joined.
  std::vector<std::thread> take_ended_links();

  std::shared_ptr<Judge> judge_;
  RelaySockets sockets_;
  UniqueFd stop_;             // an eventfd: readable once stop() is called
  mutable std::mutex mutex_;  // map_, refusals_, links_, ended_
  SyntheticMap map_;
  std::vector<std::string> refusals_;
  std::uint64_t refusals_dropped_ = 0;
  std::list<std::thread> links_;
  std::vector<std::list<std::thread>::iterator> ended_;
  std::thread loop_;
  std::thread broker_;
  std::atomic<bool> stopped_{false};
};

// Moves bytes both ways between two connected stream sockets with splice(2)
// until both directions have ended (each end is shut down for writing when
// its source ends) or `stop` is readable; bytes counted each way.
struct Pumped {
  std::uint64_t a_to_b = 0;
  std::uint64_t b_to_a = 0;
};
Pumped pump(int a, int b, int stop);

}  // namespace chock::net
