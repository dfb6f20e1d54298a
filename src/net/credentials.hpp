// The credential store: secrets the host side adds to a request and no call
// ever holds. One file in the data directory ($XDG_DATA_HOME/chock/
// credentials.json, mode 0600), never in any call's mount set. Its one use:
// `chock fetch` sends the stored Authorization header to exactly that host,
// over https only, and never on a redirect to another host.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "chock/error.hpp"
#include "chock/net.hpp"

namespace chock::net {

inline constexpr std::size_t kMaxSecretBytes = 4096;

Expected<std::string> credentials_path();
// The secret is the Authorization header's value ("Bearer abc", "token abc");
// a bare token is sent as "Bearer <token>". Printable ASCII only, so it can
// never add a header of its own.
Expected<void> set_credential(const Host& host, std::string_view secret);
Expected<std::vector<std::string>> credential_hosts();
Expected<bool> remove_credential(const Host& host);  // false: there was none
Expected<std::optional<std::string>> credential_for(const Host& host);

}  // namespace chock::net
