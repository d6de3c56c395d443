#include <catch2/catch.hpp>
#include <set>

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

TEST_CASE("a buffer allocated after churn gets scattered pages", "[vram]") {
  VramPageAllocator a(64);
  std::vector<std::vector<std::uint64_t>> bufs;
  for (int i = 0; i < 8; ++i)
    bufs.push_back(*a.allocate(8));
  a.free(bufs[1]);
  a.free(bufs[5]);
  auto z = a.allocate(12);
  REQUIRE(z);
  // Pages come from both holes: not one contiguous run.
  CHECK((*z)[11] - (*z)[0] != 11);
}
