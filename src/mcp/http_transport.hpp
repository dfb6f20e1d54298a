// `chock mcp --http ADDRESS:PORT`: the same server as on stdio, over MCP's
// Streamable HTTP transport (2025-06-18 and 2025-11-25; 2025-03-26's
// batches too), at one endpoint, /mcp, on the loopback only
// (http_server.hpp). Each client session (its Mcp-Session-Id is given with
// the answer to initialize) is a Server of its own (server_impl.hpp) fed
// through a pipe as stdio would feed it, so it has a Chock session of its
// own; DELETE ends it. A POST that holds requests is answered with an
// event stream (or one JSON body when the client accepts only that) that
// carries their answers and what the server says meanwhile: progress, log
// lines, the questions it asks the person (elicitation), whose answers
// come back as POSTs of their own; a GET opens a stream for what belongs
// to no request.
//
// Every request needs the bearer token (Authorization: Bearer ...), made
// and printed once at start, or read from a file only its owner can read.
// A Host or an Origin that is not the loopback's is refused (403) before
// the token is looked at: a web page the person opened cannot reach the
// server through a name it rebound to 127.0.0.1.
#pragma once

#include <string>
#include <utility>

#include "chock/error.hpp"
#include "mcp/server.hpp"

namespace chock::mcp {

struct HttpOptions {
  std::string address = "127.0.0.1";
  int port = 0;            // 0: one the kernel picks (the URL printed says which)
  std::string token_file;  // empty: a token is made and printed on stderr
  ServerOptions server;    // each client session's server gets a copy
};

// Serves until SIGINT or SIGTERM: 0, else 125 with a line on stderr (a
// listener that cannot be opened, a token file that cannot be used).
int serve_http(const HttpOptions& options);

// "ADDRESS:PORT", "[::1]:PORT" or "PORT" (127.0.0.1).
[[nodiscard]] Expected<std::pair<std::string, int>> parse_listen(const std::string& spec);
// A Host header that names the loopback (127.0.0.1, localhost, [::1], any port).
[[nodiscard]] bool loopback_host(const std::string& host);
// An Origin of the loopback: http:// or https://, then a loopback host.
[[nodiscard]] bool loopback_origin(const std::string& origin);
// The token in a file: its first line, at least 16 characters; the file
// must be its reader's own and nobody else's to read.
[[nodiscard]] Expected<std::string> read_token(const std::string& path);

}  // namespace chock::mcp
