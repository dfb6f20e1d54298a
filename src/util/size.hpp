// The values limit flags take: sizes ("512MiB", "2GiB", "4096") and counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "chock/error.hpp"

namespace chock {

// Bytes, with an optional binary unit: B, KiB, MiB, GiB, TiB. Decimal units
// (MB, GB) are refused rather than guessed at. `flag` names the flag in errors.
// "1 KiB", "2.5 MiB", "900 bytes": a size for people to read.
[[nodiscard]] std::string human_size(std::uint64_t bytes);
// "512 MiB", "2 GiB", "1000 bytes": exact, in the form the flags take (a
// limit said back as it can be given).
[[nodiscard]] std::string format_size(std::uint64_t bytes);

[[nodiscard]] Expected<std::uint64_t> parse_size(std::string_view flag, std::string_view text);
// A plain decimal count.
[[nodiscard]] Expected<std::uint64_t> parse_count(std::string_view flag, std::string_view text);

}  // namespace chock
