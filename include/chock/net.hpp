// The network, host side: how Chock names a connection for the policy table
// and which addresses it never dials. Every network path of Chock (the
// filtered mode, fetch_url, MCP servers) judges a name before anything is
// looked up, resolves it itself, checks each address, and dials the address
// it checked.
//
// Action names:
//   net.connect.<host labels reversed>.<port>   api.github.com:443 -> net.connect.com.github.api.443
//   net.fetch.<host labels reversed>            net.fetch.com.github.api
// lower-cased. An IP literal is a name of its own, in network order so that a
// `x.*` rule is a prefix of addresses:
//   198.51.100.7      -> ip4.198.51.100.7
//   2001:db8::1       -> ip6.2001.0db8.0000.0000.0000.0000.0000.0001
// (`net.connect.ip4.198.51.*` allows 198.51.0.0/16, any port). A host name
// whose last label is ip4 or ip6 is refused, so no name can pose as one.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <chock/error.hpp>

namespace chock::net {

// A host as the policy table sees it: a lower-case DNS name, or an address.
struct Host {
  enum class Kind { name, ip4, ip6 };
  Kind kind = Kind::name;
  std::string text;    // the name (lower case, no trailing dot), or the address as written canonically
  std::string labels;  // for the action: "com.github.api", "ip4.198.51.100.7", "ip6.2001.0db8...."
  sockaddr_storage address{};  // ip4 / ip6: the literal's address (port 0)
};

// Parses a host: a DNS name (letters, digits, '-' and '_' in labels of 1 to
// 63 bytes, 253 bytes at most, one trailing dot allowed), an IPv4 address in
// dotted-quad form, or an IPv6 address (with or without brackets). Anything
// else (a space, a non-ASCII byte, an empty label, "1.2.3" or an octal-looking
// quad) is an Error naming what is wrong.
Expected<Host> parse_host(std::string_view text);
// "host:port", "[v6]:port"; the port 1 to 65535.
Expected<std::pair<Host, std::uint16_t>> parse_host_port(std::string_view text);

std::string connect_action(const Host& host, std::uint16_t port);
std::string fetch_action(const Host& host);

// A range of addresses, "10.0.0.0/8" or "fd00::/8", as the operator allows
// private ranges (~/.config/chock/config.zon).
struct Cidr {
  sockaddr_storage base{};
  unsigned prefix = 0;
};
Expected<Cidr> parse_cidr(std::string_view text);
bool contains(const Cidr& range, const sockaddr_storage& address);
// Whether the whole range lies in one private range (10/8, 172.16/12,
// 192.168/16, 100.64/10, fc00::/7): the only addresses an operator can allow.
bool within_private(const Cidr& range);

// Why Chock never dials `address`, or nullopt when it may: loopback,
// unspecified, link-local (with the cloud metadata addresses), multicast,
// broadcast, 0.0.0.0/8, 240.0.0.0/4, an address of this machine's own
// interfaces (`own`), or a private range (10/8, 172.16/12, 192.168/16,
// 100.64/10, fc00::/7) that no range in `allowed_private` contains. IPv6
// forms that carry an IPv4 address (mapped, compatible, NAT64 64:ff9b::/96)
// are judged as that IPv4 address.
std::optional<std::string> refusal(const sockaddr_storage& address, const std::vector<Cidr>& allowed_private,
                                   const std::vector<sockaddr_storage>& own);
// The addresses of this machine's interfaces (getifaddrs).
std::vector<sockaddr_storage> own_addresses();
// "198.51.100.7", "2001:db8::1".
std::string address_text(const sockaddr_storage& address);

// A URL as `chock fetch` takes it: http or https, a host, a port, the path
// and query. Refused, with what is wrong: another scheme, a user or password
// ("http://u:p@host/"), a backslash, a space, a control or non-ASCII byte
// anywhere, a host parse_host refuses. The fragment is dropped (it never
// leaves the client). text() is the URL rebuilt from its parts, the only
// form passed on, so that nothing downstream reads a different host from
// the one judged.
struct Url {
  std::string scheme;  // "http" or "https"
  Host host;
  std::uint16_t port = 0;  // as written, else 80 or 443
  std::string target;      // "/" at least: the path, then "?query" if any
  [[nodiscard]] std::string text() const;
  [[nodiscard]] std::string authority() const;  // "host", "host:8080", "[2001:db8::1]"
};
Expected<Url> parse_url(std::string_view text);

// Resolves a name with a deadline (c-ares: /etc/hosts, then the servers of
// /etc/resolv.conf), IPv4 and IPv6; an address literal is its own answer.
// Errors: no answer within the deadline, no such name, no address.
// A readable `cancel_fd` (an eventfd, a pipe) ends the wait at once (ECANCELED).
Expected<std::vector<sockaddr_storage>> resolve(const Host& host, std::chrono::milliseconds deadline,
                                                int cancel_fd = -1);

// A TCP connection to `address`:`port` within the deadline; a blocking,
// close-on-exec descriptor the caller owns.
Expected<int> dial(const sockaddr_storage& address, std::uint16_t port, std::chrono::milliseconds deadline,
                   int cancel_fd = -1);

// What the policy says of an action, as the caller folds it (the table, a
// question at the terminal, an answer given earlier).
struct Ruling {
  bool allowed = false;
  std::string decision;  // what the policy answered: "deny", "ask" or "allow"
  std::string rule;      // where the deciding rule was written; empty for a default
  std::string refusal;   // when not allowed: why, in words (names the rule)
};
using RuleFn = std::function<Ruling(const std::string& action)>;

struct JudgeOptions {
  std::vector<Cidr> allowed_private;  // the operator's ranges (config.zon .allow_private)
  std::chrono::milliseconds resolve_deadline{5000};
  std::chrono::milliseconds connect_deadline{10000};
  // Where each decision goes (the session log): event name and fields.
  std::function<void(std::string_view event, const nlohmann::json& fields)> record;
  // A filtered call's resolver asks before any port is known: may the call
  // reach this name at all? Unset: the answer for port 0, which only a
  // pattern (`net.connect.org.example.*`) can give. `ask` counts as may
  // (the question comes at the connect, with the port).
  std::function<Ruling(const Host& host)> name_rule;
  // Resolve each name once for the life of the judge (a call): later
  // connections dial the addresses checked the first time, so a name cannot
  // be rebound to another address mid-call, and a connection costs no lookup.
  bool lookup_once = false;
  // Each refusal's line the first time a filtered call's relay makes it,
  // while the call runs (a person waiting on a silent install learns the
  // row to add at once). From a thread of the relay.
  std::function<void(const std::string& line)> refused;
};

// One decision: the action judged, then (only when allowed) the lookup and
// the addresses that passed refusal().
struct Verdict {
  bool allowed = false;
  std::string action;
  Ruling ruling;
  bool resolved = false;                       // a lookup was made
  std::vector<sockaddr_storage> addresses;     // the addresses that may be dialled, in the resolver's order
  std::vector<std::string> refused_addresses;  // "10.0.0.1: a private address (10.0.0.0/8)"
  std::string refusal;                         // when not allowed: one line naming the rule or the address
  double resolve_ms = 0;
};

// A connection the judge made. Bytes read and written through it are
// counted; its net.connect event is recorded when it closes.
class Connection {
 public:
  Connection() = default;
  Connection(Connection&& other) noexcept;
  Connection& operator=(Connection&& other) noexcept;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
  [[nodiscard]] int fd() const { return fd_; }
  [[nodiscard]] const sockaddr_storage& address() const { return address_; }
  // read(2) and write(2), counted.
  ssize_t read(void* buffer, std::size_t size);
  ssize_t write(const void* buffer, std::size_t size);
  // Counts bytes moved by someone else (a relay splicing the descriptor).
  void count(std::uint64_t in, std::uint64_t out);
  void close() noexcept;

 private:
  friend class Judge;
  class Judge* judge_ = nullptr;
  int fd_ = -1;
  sockaddr_storage address_{};
  nlohmann::json event_;
  std::uint64_t in_ = 0, out_ = 0;
  std::chrono::steady_clock::time_point opened_;
};

// While a rule runs for Judge::connect: the descriptor that becomes readable
// when the connection's call is ending (a question put to the person is then
// moot, and answered no); -1 anywhere else.
[[nodiscard]] int rule_cancel_fd() noexcept;

// The one judge every network path of Chock goes through: the action is
// judged before anything is looked up, so a refused name is never resolved;
// then the name is resolved by Chock, each address checked, and the address
// that was checked dialled (no second lookup).
class Judge {
 public:
  explicit Judge(RuleFn rule, JudgeOptions options = {});
  // net.connect.<host>.<port>: judged, resolved, checked.
  Verdict judge_connect(const Host& host, std::uint16_t port);
  // Whether a filtered call's resolver answers `host` (nothing is looked up).
  Ruling judge_name(const Host& host);
  // net.fetch.<host>: the same with the fetch action (the port is the URL's).
  Verdict judge_fetch(const Host& host);
  // judge_connect, then a dial of each allowed address in turn until one
  // answers. A refusal or a failed dial is an Error whose what is the line
  // to show; either way a net.connect event is recorded.
  // `cancel_fd`: readable, the lookup and the dial end at once (a relay
  // whose call has ended).
  Expected<Connection> connect(const Host& host, std::uint16_t port, int cancel_fd = -1);
  // {"connections":N,"refused":N,"bytes_in":N,"bytes_out":N,"hosts":[...]}
  [[nodiscard]] nlohmann::json summary() const;
  // Records an event through options.record (nothing when there is none).
  void record(std::string_view event, const nlohmann::json& fields);
  // Counts a use of the network that was not a connection of this judge (a
  // fetch hop): allowed or refused, and the bytes it moved.
  void tally(const std::string& host, bool allowed, std::uint64_t in, std::uint64_t out);
  [[nodiscard]] const JudgeOptions& options() const { return options_; }

 private:
  friend class Connection;
  Verdict judge(const Host& host, std::string action, int cancel_fd = -1);
  Ruling rule(const std::string& action);

  RuleFn rule_;
  JudgeOptions options_;
  // The relay judges from many threads: one question at the terminal at a
  // time, one writer of the record and the counts.
  std::mutex rule_mutex_;
  mutable std::mutex count_mutex_;
  std::vector<sockaddr_storage> own_;
  std::uint64_t connections_ = 0, refused_ = 0, in_ = 0, out_ = 0;
  std::vector<std::string> hosts_;
  std::mutex lookup_mutex_;
  std::map<std::string, std::vector<sockaddr_storage>> looked_up_;  // lookup_once: name -> answer
};

}  // namespace chock::net
