// chock-fetch-hop's confinement, which it puts on itself once libcurl and
// OpenSSL have started and before the first byte from the web: the code
// that parses what a hostile server sends (TLS, decompressors) then reads
// only what TLS needs and has no network but the socket Chock dialled for it.
#pragma once

#include <string>
#include <vector>

#include "chock/error.hpp"
#include "sandbox/landlock.hpp"

namespace chock::sandbox {

// The descriptor chock-fetch-hop is handed its one socket on, connected:
// what the command line's runner of a hop and the fetcher's filter agree on.
inline constexpr int kFetcherSocketFd = 5;

// What the fetcher may still read: the CA store (`ca_file`; `ca_path` and
// the files its hashed links lead to), and every file mapped into this
// process now (the program and its libraries). Paths that are not there are
// left out.
[[nodiscard]] std::vector<landlock::Rule> fetcher_reads(const std::string& ca_file,
                                                        const std::string& ca_path);

// Landlock (landlock::confine_fetcher, with fetcher_reads) and then
// seccomp::fetcher(), on this thread: nothing written, nothing read but
// those, no connect or bind on any port, no new socket of any family.
// The Landlock ABI it ran at.
[[nodiscard]] Expected<int> confine_fetcher(const std::string& ca_file, const std::string& ca_path);

}  // namespace chock::sandbox
