#include <catch2/catch.hpp>

#include "models/mmu/tlb.hpp"

using namespace podsim;

TEST_CASE("a TLB hits what it holds and misses what it does not", "[tlb]") {
  Tlb<int> tlb(8, 2);  // 4 sets of 2 ways
  CHECK(tlb.sets() == 4);
  CHECK(tlb.lookup(0, 5) == nullptr);
  tlb.insert(0, 5, 50);
  REQUIRE(tlb.lookup(0, 5) != nullptr);
  CHECK(*tlb.lookup(0, 5) == 50);
  CHECK(tlb.lookup(1, 5) == nullptr);  // another address space
  tlb.insert(0, 5, 51);                // refresh in place
  CHECK(*tlb.lookup(0, 5) == 51);
}

TEST_CASE("LRU replacement evicts the least recently used way of the set", "[tlb]") {
  Tlb<int> tlb(4, 2);  // 2 sets; pages 0, 2, 4 share set 0
  tlb.insert(0, 0, 1);
  tlb.insert(0, 2, 2);
  CHECK(tlb.lookup(0, 0) != nullptr);  // 0 is now more recent than 2
  tlb.insert(0, 4, 3);                 // evicts 2
  CHECK(tlb.lookup(0, 2) == nullptr);
  CHECK(tlb.lookup(0, 0) != nullptr);
  CHECK(tlb.lookup(0, 4) != nullptr);
  CHECK(tlb.lookup(0, 1) == nullptr);  // set 1 untouched
}

TEST_CASE("invalidation by space, range and all", "[tlb]") {
  Tlb<int> tlb(64, 4);
  for (std::uint64_t p = 0; p < 16; ++p) {
    tlb.insert(0, p, 1);
    tlb.insert(1, p, 1);
  }
  tlb.invalidate_range(0, 4, 4);
  CHECK(tlb.lookup(0, 3) != nullptr);
  CHECK(tlb.lookup(0, 4) == nullptr);
  CHECK(tlb.lookup(0, 7) == nullptr);
  CHECK(tlb.lookup(0, 8) != nullptr);
  tlb.invalidate_space(1);
  CHECK(tlb.lookup(1, 0) == nullptr);
  CHECK(tlb.lookup(0, 0) != nullptr);
  tlb.invalidate_all();
  CHECK(tlb.lookup(0, 0) == nullptr);
  CHECK_THROWS(Tlb<int>(10, 4));
}
