// The network, host side: how Chock names a connection for the policy table
// and which addresses it never dials. Every network path of Chock (the
// filtered mode, fetch_url, MCP servers) judges a name before anything is
// looked up, resolves it itself, checks each address, and dials the address
// it checked. This header is the first half: names and address checks.
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

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace chock::net
