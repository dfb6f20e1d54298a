// One hop of `chock fetch`: chock-fetch-hop run at an address the judge
// checked, its body read back and what it reported parsed.
#pragma once

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "chock/error.hpp"
#include "chock/net.hpp"

namespace chock::cli {

struct HopRequest {
  net::Url url;
  sockaddr_storage address{};
  std::uint64_t max_bytes = 0;
  std::chrono::milliseconds connect_deadline{10000};
  std::chrono::milliseconds deadline{30000};
  bool text = false;
  // The stored credential of this hop's host and port, "Name: value" (https
  // only); handed to the fetcher through a pipe, never its command line.
  std::string credential;
};

struct HopAnswer {
  long status = 0;
  std::string content_type;  // control characters stripped
  std::string location;      // a redirect's target as the server wrote it (absolute), unjudged
  std::string body;          // the body, or its text with --text; empty for a redirect
  std::uint64_t bytes = 0;   // decoded body bytes read (before --text)
  bool cut = false;          // the body passed max_bytes and was cut there
  std::uint64_t wire_in = 0, wire_out = 0;
  std::string error;  // the hop failed (connect, TLS, timeout, --text of a non-text page): in words
};

// Where chock-fetch-hop is (a companion: util/dirs.hpp).
[[nodiscard]] Expected<std::string> find_hop_program();

// Dials the request's address (within its connect deadline) and runs the
// program on that socket, with an empty environment (no proxy, CA or
// key-log variables reach libcurl or OpenSSL) and nothing but the socket and
// the pipes open, killed if it outlives the deadline by five seconds. A
// failed dial is an answer with an error, as a failed fetch is.
[[nodiscard]] Expected<HopAnswer> run_hop(const std::string& program, const HopRequest& request);

}  // namespace chock::cli
