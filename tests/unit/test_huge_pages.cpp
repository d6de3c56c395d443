// The huge-page allocator: blocks of every size class are usable, aligned, reused once given
// back, and counted.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
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

TEST_CASE("a run's heap is asked onto huge pages only where that changes something", "[memory]") {
  HeapFacts f;  // a host where it does: the kernel gives huge pages to memory that asks
  f.thp_mode = "always [madvise] never";
  f.thp_bytes = kHugePage;
  f.glibc_major = 2;
  f.glibc_minor = 36;
  REQUIRE(huge_heap_tunables(f) == std::optional<std::string>("glibc.malloc.hugetlb=1"));
  SECTION("other tunables are kept") {
    f.glibc_tunables = "glibc.malloc.arena_max=2";
    CHECK(huge_heap_tunables(f) ==
          std::optional<std::string>("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"));
  }
  SECTION("the user's own setting stands") {
    f.glibc_tunables = "glibc.malloc.hugetlb=0";
    CHECK_FALSE(huge_heap_tunables(f));
  }
  SECTION("PODSIM_HUGE_PAGES=0 turns it off; =1 asks even where the kernel would not heed it") {
    f.huge_pages = "0";
    CHECK_FALSE(huge_heap_tunables(f));
    f.huge_pages = "1";
    f.thp_mode = "[always] madvise never";
    CHECK(huge_heap_tunables(f));
  }
  SECTION("the kernel's other modes: glibc uses the tunable only in madvise mode") {
    for (const char* mode : {"[always] madvise never", "always madvise [never]", ""}) {
      f.thp_mode = mode;
      CHECK_FALSE(huge_heap_tunables(f));
    }
  }
  SECTION("glibc before 2.35 has no such tunable") {
    f.glibc_minor = 34;
    CHECK_FALSE(huge_heap_tunables(f));
    f.glibc_major = 3;
    f.glibc_minor = 0;
    CHECK(huge_heap_tunables(f));
  }
  SECTION("valgrind, another allocator or a tool preloaded; a debugger; the loader") {
    f.ld_preload = "/usr/libexec/valgrind/vgpreload_core-amd64-linux.so";
    CHECK_FALSE(huge_heap_tunables(f));
    f.ld_preload = "";
    f.traced = true;
    CHECK_FALSE(huge_heap_tunables(f));
    f.traced = false;
    f.by_loader = true;
    CHECK_FALSE(huge_heap_tunables(f));
  }
  SECTION("huge pages off for the process, not 2 MiB, or a sanitizer's allocator") {
    f.thp_off = true;
    CHECK_FALSE(huge_heap_tunables(f));
    f.thp_off = false;
    f.thp_bytes = std::uint64_t{512} << 20;  // arm64 with 64 KiB pages
    CHECK_FALSE(huge_heap_tunables(f));
    f.thp_bytes = kHugePage;
    f.sanitized = true;
    CHECK_FALSE(huge_heap_tunables(f));
  }
}

TEST_CASE("huge_heap_asked reads glibc's last hugetlb setting", "[memory]") {
  const char* was = std::getenv("GLIBC_TUNABLES");
  const std::string saved = was ? was : "";
  auto asked = [](const char* t) {
    ::setenv("GLIBC_TUNABLES", t, 1);
    return huge_heap_asked();
  };
  CHECK(asked("glibc.malloc.hugetlb=1"));
  CHECK(asked("glibc.malloc.arena_max=2:glibc.malloc.hugetlb=1"));
  CHECK_FALSE(asked("glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=0"));
  CHECK_FALSE(asked("glibc.malloc.hugetlb=2"));
  CHECK_FALSE(asked("glibc.malloc.hugetlb=10"));
  CHECK_FALSE(asked("glibc.malloc.arena_max=2"));
  ::unsetenv("GLIBC_TUNABLES");
  CHECK_FALSE(huge_heap_asked());
  if (was) ::setenv("GLIBC_TUNABLES", saved.c_str(), 1);
}
