// The credential store: secrets the host side adds to a request and no call
// ever holds. One file in the data directory ($XDG_DATA_HOME/chock/
// credentials.json, mode 0600), never in any call's mount set.
//
// A credential is bound to one host and port, and says which header carries
// it and how ("Authorization: Bearer {}", "x-api-key: {}"). `chock fetch`
// sends that header to exactly that host, over https only, never on a
// redirect to another host. One that names a variable (`--env VAR`) is also
// stood for in the project's filtered calls: VAR holds a sentinel of the
// secret's shape (session/sentinels.hpp), never the secret.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"
#include "chock/net.hpp"

namespace chock::net {

inline constexpr std::size_t kMaxSecretBytes = 4096;

struct Credential {
  std::string host;  // as parse_host writes it (lower case)
  std::uint16_t port = 443;
  std::string header = "Authorization";
  std::string format = "{}";  // the header's value, the secret at "{}"
  std::string secret;
  std::string env;  // a variable of the project's filtered calls that holds a sentinel; empty: none
  // "Bearer abc": `format` with the secret put in.
  [[nodiscard]] std::string header_value() const;
};

// What `chock credentials set` was given; empty strings and 0 mean "the default".
struct CredentialSpec {
  std::uint16_t port = 0;  // 443
  std::string header;      // Authorization
  std::string format;      // "Bearer {}" for a bare token in Authorization, else "{}"
  std::string env;
};

Expected<std::string> credentials_path();
// The secret is printable ASCII only, so it can never add a header of its
// own; the header a token (RFC 9110), the format holding "{}" once, the
// variable a name a call could not use otherwise (not PATH, HOME, LD_*...).
Expected<Credential> set_credential(const Host& host, std::string_view secret,
                                    const CredentialSpec& spec = {});
Expected<std::vector<Credential>> credentials();     // every one, secrets included: for the host side only
Expected<bool> remove_credential(const Host& host);  // false: there was none
// The credential of exactly `host` on `port`, if any.
Expected<std::optional<Credential>> credential_for(const Host& host, std::uint16_t port = 443);

// A stand-in for `secret` that a client takes for the real one: the same
// length, the same public prefix ("sk-ant-api03-", "ghp_"), the rest random
// letters and digits. An Error when the secret is too short to stand for.
Expected<std::string> make_sentinel(std::string_view secret);
// How many of the secret's first bytes a sentinel keeps.
[[nodiscard]] std::size_t sentinel_prefix(std::string_view secret);

}  // namespace chock::net
