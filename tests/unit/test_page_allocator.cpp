#include <catch2/catch.hpp>
#include <set>

#include "models/mmu/page_table.hpp"
#include "models/vram/page_allocator.hpp"

using namespace podsim;

TEST_CASE("VRAM pages are handed out once and come back", "[vram]") {
  VramPageAllocator a(100);
  auto x = a.allocate(30);
  auto y = a.allocate(30);
  REQUIRE(x);
  REQUIRE(y);
  std::set<std::uint64_t> all(x->begin(), x->end());
  all.insert(y->begin(), y->end());
  CHECK(all.size() == 60);
  CHECK(a.free_pages() == 40);
  CHECK_FALSE(a.allocate(41));  // ENOMEM: nothing changes
  CHECK(a.free_pages() == 40);
  a.free(*x);
  CHECK(a.free_pages() == 70);
  CHECK(a.is_free((*x)[0]));
  CHECK_FALSE(a.is_free((*y)[0]));
  CHECK_THROWS(a.free(*x));  // double free
}

TEST_CASE("scattered allocation spreads a buffer's pages over VRAM", "[vram]") {
  VramPageAllocator a(1 << 20, VramPageAllocator::Policy::Scattered, 16, false, Rng(7));
  auto pages = a.allocate(256);
  REQUIRE(pages);
  std::set<std::uint64_t> distinct(pages->begin(), pages->end());
  CHECK(distinct.size() == 256);
  int runs = 1;
  for (std::size_t i = 1; i < pages->size(); ++i)
    runs += (*pages)[i] != (*pages)[i - 1] + 1;
  CHECK(runs > 8);  // many separate runs ...
  CHECK(*std::max_element(pages->begin(), pages->end()) -
            *std::min_element(pages->begin(), pages->end()) >
        100'000);  // ... far apart
  // First fit keeps them together.
  VramPageAllocator ff(1 << 20);
  auto contiguous = ff.allocate(256);
  CHECK((*contiguous)[255] - (*contiguous)[0] == 255);
}

TEST_CASE("with clear-on-free, freed pages are dirty until cleared", "[vram]") {
  VramPageAllocator a(64, VramPageAllocator::Policy::FirstFit, 1, true);
  auto x = a.allocate(64);
  REQUIRE(x);
  a.free(std::span<const std::uint64_t>(x->data(), 10));
  CHECK(a.free_pages() == 10);
  CHECK(a.clean_pages() == 0);
  CHECK(a.dirty_pages() == 10);
  CHECK_FALSE(a.allocate(1));  // nothing clean yet
  for (int i = 0; i < 4; ++i)
    a.mark_clean(*a.next_dirty());
  CHECK(a.clean_pages() == 4);
  auto y = a.allocate(4);
  REQUIRE(y);
  CHECK((*y)[0] == (*x)[0]);  // the oldest freed page was cleared first
}

TEST_CASE("pinned pages are counted and cannot be freed", "[vram]") {
  VramPageAllocator a(16);
  auto x = a.allocate(4);
  a.pin(*x);
  a.pin(*x);
  CHECK(a.pinned_pages() == 4);
  CHECK(a.is_pinned((*x)[2]));
  CHECK_THROWS(a.free(*x));
  a.unpin(*x);
  CHECK(a.is_pinned((*x)[0]));
  a.unpin(*x);
  CHECK(a.pinned_pages() == 0);
  a.free(*x);
  CHECK_THROWS(a.unpin(*x));
}

TEST_CASE("fragments: the largest aligned, contiguous run", "[vram][mmu]") {
  std::vector<std::uint64_t> frames(1024);
  for (std::uint64_t i = 0; i < 1024; ++i)
    frames[i] = 8192 + i;
  auto frame = [&](std::uint64_t i) { return frames[i]; };
  CHECK(best_fragment(0, 0, 1024, frame) == kFragment2M);
  CHECK(best_fragment(1, 0, 1024, frame) == 0);                           // VA not aligned
  CHECK(best_fragment(16, 0, 100, frame) == kFragment64K);                // too short for 2 MiB
  CHECK(best_fragment(0, 0, 256, frame) == 8);                            // 1 MiB: any power of two
  CHECK(best_fragment(0, 0, 1024, frame, kFragment64K) == kFragment64K);  // the driver's cap
  CHECK(best_fragment(0, 0, 1024, frame, 0) == 0);
  frames[5] = 7;                                 // a hole
  CHECK(best_fragment(0, 0, 1024, frame) == 2);  // the 4 pages before it
  CHECK(best_fragment(0, 5, 1024, frame) == 0);
  CHECK(best_fragment(0, 16, 1024, frame) == kFragment64K);  // VA page 16: 16-aligned
  CHECK(best_fragment(0, 512, 1024, frame) == kFragment2M);
}

TEST_CASE("pin counts are kept per run of pages, exactly as per page", "[vram]") {
  // A big buffer's pins cost what its runs cost, not a map entry per page; counts still add up
  // page by page where pins overlap, and the digest is the one a count per page gave.
  VramPageAllocator a(1u << 20, VramPageAllocator::Policy::Scattered, 16);
  auto x = a.allocate(100'000);
  REQUIRE(x);
  a.pin(*x);
  CHECK(a.pinned_pages() == 100'000);
  const std::vector<std::uint64_t> some(x->begin() + 10, x->begin() + 20);
  a.pin(some);  // pinned twice
  CHECK(a.pinned_pages() == 100'000);
  a.unpin(*x);
  CHECK(a.pinned_pages() == 10);
  for (std::size_t i = 0; i < x->size(); ++i)
    REQUIRE(a.is_pinned((*x)[i]) == (i >= 10 && i < 20));
  CHECK_THROWS(a.free(some));
  const std::vector<std::uint64_t> straddle(x->begin() + 15, x->begin() + 25);
  CHECK_THROWS_WITH(a.unpin(straddle), Catch::Contains("not pinned"));
  a.unpin(some);
  CHECK(a.pinned_pages() == 0);
  CHECK_THROWS(a.unpin(some));
  // The same page twice in one call counts twice.
  const std::vector<std::uint64_t> twice{(*x)[0], (*x)[0]};
  a.pin(twice);
  CHECK(a.pinned_pages() == 1);
  a.unpin(std::vector<std::uint64_t>{(*x)[0]});
  CHECK(a.is_pinned((*x)[0]));
  a.unpin(std::vector<std::uint64_t>{(*x)[0]});
  CHECK_FALSE(a.is_pinned((*x)[0]));
  a.free(*x);
}

TEST_CASE("unpinning pages in a row checks every page, and a page given twice needs two pins",
          "[vram]") {
  VramPageAllocator a(1u << 12, VramPageAllocator::Policy::FirstFit);
  auto x = a.allocate(64);
  REQUIRE(x);
  for (std::size_t i = 1; i < x->size(); ++i)
    REQUIRE((*x)[i] == (*x)[i - 1] + 1);  // in a row (first fit on empty VRAM)
  const std::vector<std::uint64_t> row(x->begin() + 8, x->begin() + 40);
  a.pin(row);
  // A row reaching one page past its pins: refused, naming that page, nothing unpinned.
  const std::vector<std::uint64_t> longer(x->begin() + 8, x->begin() + 41);
  CHECK_THROWS_WITH(a.unpin(longer),
                    Catch::Contains("VRAM page " + std::to_string((*x)[40]) + " not pinned"));
  // One page of the row given again, pinned once: refused, naming it.
  std::vector<std::uint64_t> again = row;
  again.push_back(row[5]);
  CHECK_THROWS_WITH(a.unpin(again),
                    Catch::Contains("VRAM page " + std::to_string(row[5]) + " not pinned"));
  CHECK(a.pinned_pages() == row.size());
  a.pin(std::vector<std::uint64_t>{row[5]});
  a.unpin(again);
  CHECK(a.pinned_pages() == 0);
  a.free(*x);
}
