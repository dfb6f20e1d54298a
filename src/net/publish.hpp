// Published ports: a server a call started, reached from the person's
// browser and from nothing else. The host side listens on 127.0.0.1 and
// [::1] only, and relays each connection it accepts into the call's network
// namespace, to 127.0.0.1:CALL_PORT there and nowhere else, through a socket
// that belongs to that namespace.
//
// Such a socket is made by a small process of the host side (forked from
// the caller, never a process of the call) that has joined the call's user
// and network namespaces through the keeper's pidfd, and does nothing but
// make unconnected TCP sockets there and pass them back (SCM_RIGHTS). The
// caller connects them itself: no process of the call holds a host socket,
// no veth or route joins the two namespaces, and a connection from anywhere
// but the host's loopback cannot reach the listener (it is bound to the
// loopback address, which only the host's own processes can send from).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "chock/error.hpp"
#include "util/fd.hpp"

namespace chock::net {

// "[HOST_PORT:]CALL_PORT" as given: host_port 0 means "any free port".
struct PortSpec {
  std::uint16_t host_port = 0;
  std::uint16_t call_port = 0;
};
// An Error (Errc::bad_usage) names the text and what is wrong with it.
[[nodiscard]] Expected<PortSpec> parse_port_spec(const std::string& text);

// One published port: its listeners on the host's loopback (IPv4, and IPv6
// where the host has it) and the call's port they lead to.
struct Published {
  std::uint16_t host_port = 0;  // the port bound (chosen by the kernel when asked for 0)
  std::uint16_t call_port = 0;
  UniqueFd v4;
  UniqueFd v6;  // may be absent: no IPv6 loopback
  [[nodiscard]] std::string url() const { return "http://127.0.0.1:" + std::to_string(host_port) + "/"; }
};

// Binds and listens on 127.0.0.1:HOST_PORT and [::1]:HOST_PORT. A port that
// is taken is an Error that names it ("127.0.0.1:8000 is taken (EADDRINUSE)").
[[nodiscard]] Expected<Published> listen_published(const PortSpec& spec);

// The process that makes sockets in the call's network namespace, joined
// through `keeper_pidfd`. Ends when its descriptor closes (or the caller dies).
class SocketMaker {
 public:
  [[nodiscard]] static Expected<SocketMaker> start(int keeper_pidfd);
  SocketMaker(SocketMaker&&) noexcept = default;
  SocketMaker& operator=(SocketMaker&&) noexcept = default;
  ~SocketMaker();
  // A fresh TCP socket of the call's namespace (IPv4), or an empty fd.
  [[nodiscard]] UniqueFd make();

 private:
  SocketMaker(UniqueFd channel, UniqueFd pidfd) : channel_(std::move(channel)), pidfd_(std::move(pidfd)) {}
  void ask_next();
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  UniqueFd channel_;
  UniqueFd pidfd_;
};

// Accepts on every listener and relays each connection to 127.0.0.1:CALL_PORT
// inside the call, until stop(). `record` gets one event a connection
// ("publish.connection": from, to, bytes each way, duration).
class Publisher {
 public:
  static constexpr int kMaxLinks = 256;
  using Record = std::function<void(std::string_view event, const nlohmann::json& fields)>;
  Publisher(std::vector<Published> ports, SocketMaker maker, Record record);
  ~Publisher();
  Publisher(const Publisher&) = delete;
  Publisher& operator=(const Publisher&) = delete;
  // Listens on `port` too, from now until stop() (`chock tasks publish`);
  // an Error once stopped.
  [[nodiscard]] Expected<void> add(Published port);
  // Closes every listener (the host port refuses from here on), ends every
  // link and joins every thread; idempotent.
  void stop() noexcept;

 private:
  void serve();
  void link(UniqueFd client, std::uint16_t call_port);
  // Joins the threads of links that have ended (serve's thread only).
  void join_ended();

  std::vector<Published> ports_;    // serve's
  std::vector<Published> pending_;  // added, not yet served (under mutex_)
  SocketMaker maker_;
  Record record_;
  UniqueFd stop_;  // eventfd: readable once stop() is called
  UniqueFd wake_;  // eventfd: readable once a port is added
  std::mutex mutex_;
  std::list<std::thread> links_;
  std::vector<std::list<std::thread>::iterator> ended_;  // links_ whose thread has returned
  std::atomic<int> live_{0};
  std::thread loop_;
  std::atomic<bool> stopped_{false};
};

}  // namespace chock::net
