// The huge-page allocator: blocks of every size class are usable, aligned, reused once given
// back, and counted.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sim/core/huge_pages.hpp"

using namespace podsim;

TEST_CASE("huge-page blocks hold what is written, are aligned and are reused", "[memory]") {
  const std::uint64_t before = huge_allocations();
  struct Block {
    unsigned char* p;
    std::size_t n;
  };
  std::vector<Block> blocks;
  // Below the arena, each of its size classes (and a size between two), its largest, and a
  // mapping of its own.
  for (std::size_t n :
       {std::size_t{1000}, std::size_t{64} << 10, std::size_t{100} << 10, std::size_t{256} << 10,
        std::size_t{1} << 20, kHugePage, kHugePage * 3 + 5}) {
    auto* p = static_cast<unsigned char*>(huge_allocate(n));
    REQUIRE(p);
    std::memset(p, static_cast<int>(n & 0xFF), n);
    blocks.push_back({p, n});
    if (n >= kHugePage) CHECK(reinterpret_cast<std::uintptr_t>(p) % kHugePage == 0);
  }
  for (const Block& b : blocks) {
    INFO(b.n);
    CHECK(b.p[0] == static_cast<unsigned char>(b.n & 0xFF));
    CHECK(b.p[b.n - 1] == static_cast<unsigned char>(b.n & 0xFF));
  }
  // Blocks from the arena or a mapping of their own are counted; the small one is operator
  // new's (and with PODSIM_HUGE_PAGES=0, every one).
  const char* env = std::getenv("PODSIM_HUGE_PAGES");
  const bool on = !(env && std::string(env) == "0");
  CHECK(huge_allocations() - before == (on ? 6u : 0u));
  if (on) {
    // A block given back is the next one of its size handed out.
    unsigned char* const third = blocks[3].p;
    huge_deallocate(third, blocks[3].n);
    blocks[3].p = static_cast<unsigned char*>(huge_allocate(blocks[3].n));
    CHECK(blocks[3].p == third);
  }
  for (const Block& b : blocks)
    huge_deallocate(b.p, b.n);
  // A container on the allocator.
  std::vector<std::uint64_t, HugePageAllocator<std::uint64_t>> v;
  for (std::uint64_t i = 0; i < 1'000'000; ++i)
    v.push_back(i * 3);
  CHECK(v[999'999] == 2'999'997);
}
