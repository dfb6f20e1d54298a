// The id maps of an idmapped lower layer: the project owner and the run uid
// swap, every other id maps to itself, and the whole id space is covered
// once on each side (the kernel refuses overlapping extents; a gap would show
// some file's owner as the overflow id).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <vector>

#include "sandbox/idmap.hpp"

namespace {

struct Extent {
  std::uint64_t inside, outside, count;
};

std::vector<Extent> parse(const std::string& map) {
  std::vector<Extent> out;
  std::istringstream in(map);
  Extent e{};
  while (in >> e.inside >> e.outside >> e.count) out.push_back(e);
  return out;
}

// Each side's extents, sorted, tile [0, 4294967295) with no gap and no overlap.
void expect_tiles(std::vector<Extent> extents, std::uint64_t Extent::*side, const std::string& map) {
  std::sort(extents.begin(), extents.end(),
            [side](const Extent& a, const Extent& b) { return a.*side < b.*side; });
  std::uint64_t next = 0;
  for (const Extent& e : extents) {
    EXPECT_GT(e.count, 0U) << map;
    EXPECT_EQ(e.*side, next) << map;
    next = e.*side + e.count;
  }
  EXPECT_EQ(next, 4294967295ULL) << map;
}

std::uint64_t maps_to(const std::vector<Extent>& extents, std::uint64_t id) {
  for (const Extent& e : extents)
    if (id >= e.inside && id < e.inside + e.count) return e.outside + (id - e.inside);
  return UINT64_MAX;
}

TEST(SwapMap, SwapsTheTwoIdsAndKeepsEveryOtherAndCoversTheIdSpaceOnce) {
  const std::pair<std::uint32_t, std::uint32_t> cases[] = {
      {0, 65534}, {65534, 0}, {1000, 1001}, {0, 1}, {1, 0}, {0, 4294967294U}, {4294967294U, 7}, {42, 42}};
  for (const auto& [from, to] : cases) {
    const std::string map = chock::sandbox::swap_map(from, to);
    const auto extents = parse(map);
    EXPECT_LE(extents.size(), 5U) << map;
    expect_tiles(extents, &Extent::inside, map);
    expect_tiles(extents, &Extent::outside, map);
    EXPECT_EQ(maps_to(extents, from), to) << map;
    EXPECT_EQ(maps_to(extents, to), from) << map;
    for (std::uint64_t other : {0ULL, 1ULL, 2ULL, 999ULL, 1002ULL, 65533ULL, 65535ULL, 4294967293ULL})
      if (other != from && other != to) {
        EXPECT_EQ(maps_to(extents, other), other) << other << " in\n" << map;
      }
  }
}

}  // namespace
