// The page table stores runs of pages (contiguous pages whose frames count up, all else
// equal) but answers page by page exactly as a map of pages would: checked against one
// under random maps, remaps, unmaps and updates, including its digest.
#include <catch2/catch.hpp>

#include <map>

#include "models/mmu/page_table.hpp"
#include "sim/core/rng.hpp"

using namespace podsim;

namespace {

Pte pte(std::uint64_t frame, std::uint64_t tag = 7, bool retry = false) {
  Pte p;
  p.target = PteTarget::Npa;
  p.writable = true;
  p.frame = frame;
  p.tag = tag;
  p.retry = retry;
  p.fragment = 4;
  return p;
}

bool same(const Pte& a, const Pte& b) {
  return a.target == b.target && a.writable == b.writable && a.retry == b.retry &&
         a.fragment == b.fragment && a.frame == b.frame && a.tag == b.tag;
}

// The digest a plain page -> PTE map gives (the page table's before it stored runs).
std::uint64_t reference_digest(const std::map<std::uint64_t, Pte>& ref) {
  Digest d;
  d.add(ref.size());
  for (const auto& [page, p] : ref)
    d.add(page)
        .add(static_cast<std::uint64_t>(p.target))
        .add(p.writable)
        .add(p.retry)
        .add(p.fragment)
        .add(p.frame)
        .add(p.tag);
  return d.value();
}

void require_equal(const PageTable& t, const std::map<std::uint64_t, Pte>& ref,
                   std::uint64_t pages) {
  REQUIRE(t.mapped_pages() == ref.size());
  for (std::uint64_t page = 0; page < pages; ++page) {
    const auto it = ref.find(page);
    const Pte got = t.lookup(page);
    INFO("page " << page);
    if (it == ref.end())
      REQUIRE_FALSE(got.valid());
    else
      REQUIRE(same(got, it->second));
  }
  std::vector<std::uint64_t> order;
  t.for_each([&](std::uint64_t page, const Pte&) { order.push_back(page); });
  std::vector<std::uint64_t> expected;
  for (const auto& kv : ref)
    expected.push_back(kv.first);
  REQUIRE(order == expected);
  Digest d;
  t.digest(d);
  REQUIRE(d.value() == reference_digest(ref));
}

}  // namespace

TEST_CASE("Page table: a buffer mapped in order is one run, and answers page by page",
          "[mmu][page_table]") {
  PageTable t;
  for (std::uint64_t p = 0; p < 256; ++p)
    t.map(1000 + p, pte(5000 + p));
  CHECK(t.runs() == 1);
  CHECK(t.mapped_pages() == 256);
  CHECK(t.lookup(1000).frame == 5000);
  CHECK(t.lookup(1255).frame == 5255);
  CHECK_FALSE(t.lookup(999).valid());
  CHECK_FALSE(t.lookup(1256).valid());
  // A scattered buffer: a run per contiguous stretch of frames.
  for (std::uint64_t p = 0; p < 64; ++p)
    t.map(4000 + p, pte((p < 16 ? 100 : p < 48 ? 900 : 300) + p));
  CHECK(t.runs() == 4);
  // One page's retry bit splits its run in three; clearing it joins them again.
  t.update(1100, [](Pte& p) { p.retry = true; });
  CHECK(t.runs() == 6);
  CHECK(t.lookup(1100).retry);
  CHECK_FALSE(t.lookup(1101).retry);
  CHECK(t.lookup(1101).frame == 5101);
  t.update(1100, [](Pte& p) { p.retry = false; });
  CHECK(t.runs() == 4);
  t.update(77, [](Pte& p) { p.retry = true; });  // not mapped: nothing
  CHECK_FALSE(t.lookup(77).valid());
  // Unmapping the middle splits; unmapping all leaves nothing.
  t.unmap(1128);
  CHECK(t.runs() == 5);
  CHECK_FALSE(t.lookup(1128).valid());
  for (std::uint64_t p = 0; p < 256; ++p)
    t.unmap(1000 + p);
  CHECK(t.runs() == 3);
  CHECK(t.mapped_pages() == 64);
}

TEST_CASE("Page table: random maps, remaps, unmaps and updates agree with a map of pages",
          "[mmu][page_table]") {
  constexpr std::uint64_t kPages = 300;
  Rng rng(42);
  PageTable t;
  std::map<std::uint64_t, Pte> ref;
  for (int round = 0; round < 4000; ++round) {
    const std::uint64_t page = rng.below(kPages);
    switch (rng.below(5)) {
      case 0:
      case 1: {  // often contiguous with a neighbour, so runs form, split and join
        const std::uint64_t frame = rng.below(2) ? 10'000 + page : rng.below(50'000);
        const Pte p = pte(frame, rng.below(3) == 0 ? 8 : 7);
        t.map(page, p);
        ref[page] = p;
        break;
      }
      case 2:
        t.unmap(page);
        ref.erase(page);
        break;
      case 3: {
        const bool retry = rng.below(2);
        t.update(page, [&](Pte& p) { p.retry = retry; });
        if (auto it = ref.find(page); it != ref.end()) it->second.retry = retry;
        break;
      }
      case 4:  // a whole stretch in order
        for (std::uint64_t k = 0; k < 20 && page + k < kPages; ++k) {
          t.map(page + k, pte(20'000 + page + k));
          ref[page + k] = pte(20'000 + page + k);
        }
        break;
    }
    if (round % 200 == 0) require_equal(t, ref, kPages);
  }
  require_equal(t, ref, kPages);
  t.clear();
  ref.clear();
  require_equal(t, ref, kPages);
}
