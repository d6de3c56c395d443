#include <catch2/catch.hpp>

#include "driver_model/npa_allocator.hpp"

using podsim::driver::NpaRangeAllocator;

TEST_CASE("the first 2 MiB of the window are kept for the rings", "[npa]") {
  NpaRangeAllocator a(NpaRangeAllocator::kRingPages, 1u << 20);
  auto r = a.allocate(1);
  REQUIRE(r);
  CHECK(*r == 512);
}

TEST_CASE("ranges of 512 pages or more are aligned to 2 MiB", "[npa]") {
  NpaRangeAllocator a(512, 1u << 20);
  CHECK(*a.allocate(3) == 512);
  auto big = a.allocate(512);
  REQUIRE(big);
  CHECK(*big % 512 == 0);
  CHECK(*big == 1024);
  CHECK(*a.allocate(2) == 515);  // small ones fill the hole before the aligned range
}

TEST_CASE("freed ranges merge and can be reused, bad frees are caught", "[npa]") {
  NpaRangeAllocator a(512, 512 + 100);
  auto x = *a.allocate(40);
  auto y = *a.allocate(60);
  CHECK_FALSE(a.allocate(1));  // NOSPACE
  a.free(x, 40);
  a.free(y, 60);
  CHECK(a.free_pages() == 100);
  CHECK(*a.allocate(100) == 512);
  CHECK_THROWS(a.free(600, 3));
  CHECK_FALSE(a.allocate(0));
}

TEST_CASE("reserved pages are neither handed out nor given out, and come back when unreserved",
          "[npa]") {
  NpaRangeAllocator a(512, 512 + 100);
  a.reserve(512, 40);  // a quarantine of the first 40 pages
  CHECK(a.free_pages() == 60);
  CHECK(a.allocated_ranges() == 0);
  CHECK(*a.allocate(10) == 552);  // above them
  a.reserve(560, 10);             // only its free part (562-569) is taken
  CHECK(a.free_pages() == 42);
  CHECK_FALSE(a.allocate(43));
  a.unreserve(512, 40);
  a.unreserve(560, 10);  // the part given out stays given out
  CHECK(a.free_pages() == 90);
  CHECK(*a.allocate(36) == 512);
  CHECK(a.allocated().at(552) == 10);
}

TEST_CASE("a range given out inside a reservation and freed stays out until unreserved", "[npa]") {
  NpaRangeAllocator a(512, 512 + 100);
  REQUIRE(*a.allocate(10) == 512);
  a.reserve(512, 10);  // a quarantine of a range still given out (a deactivation's)
  a.free(512, 10);     // its connection reset frees it: it is not handed out again
  CHECK(a.free_pages() == 90);
  CHECK(*a.allocate(10) == 522);
  a.unreserve(512, 10);
  CHECK(a.free_pages() == 90);
  CHECK(*a.allocate(10) == 512);
}
