// The page table stores runs of pages (contiguous pages whose frames count up, all else
// equal) but answers page by page exactly as a map of pages would: checked against one
// under random maps, remaps, unmaps and updates, including its digest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

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

TEST_CASE(
    "Page table: range maps (contiguous ones too), range unmaps and range updates agree with a "
    "map of pages",
    "[mmu][page_table]") {
  constexpr std::uint64_t kPages = 400;
  Rng rng(7);
  PageTable t;
  std::map<std::uint64_t, Pte> ref;
  for (int round = 0; round < 3000; ++round) {
    const std::uint64_t page = rng.below(kPages);
    const std::uint64_t count = rng.below(40);  // 0 too
    switch (rng.below(6)) {
      case 5: {  // a range to frames counting up, in one step, over whatever was there
        const std::uint64_t n = std::min(count, kPages - page);
        const Pte base = pte(rng.below(90'000), rng.below(8) == 0 ? 8 : 7);
        t.map_contiguous(page, n, base);
        for (std::uint64_t k = 0; k < n; ++k) {
          Pte p = base;
          p.frame += k;
          ref[page + k] = p;
        }
        break;
      }
      case 4: {  // a range mapped at once over whatever was there, frames in stretches
        const std::uint64_t n = std::min(count, kPages - page);
        std::vector<Pte> ptes;
        std::uint64_t frame = rng.below(90'000);
        for (std::uint64_t k = 0; k < n; ++k) {
          if (rng.below(6) == 0) frame = rng.below(90'000);
          ptes.push_back(pte(frame++, rng.below(8) == 0 ? 8 : 7));
        }
        t.map(page, n, [&](std::uint64_t k) { return ptes[k]; });
        for (std::uint64_t k = 0; k < n; ++k)
          ref[page + k] = ptes[k];
        break;
      }
      case 0:
      case 1:  // a stretch mapped in order, forwards or backwards, contiguous frames or not
        for (std::uint64_t k = 0; k < count && page + k < kPages; ++k) {
          const std::uint64_t at = rng.below(4) == 0 ? page + count - 1 - k : page + k;
          if (at >= kPages) continue;
          const std::uint64_t frame = rng.below(5) == 0 ? rng.below(90'000) : 30'000 + at;
          const Pte p = pte(frame, rng.below(4) == 0 ? 8 : 7);
          t.map(at, p);
          ref[at] = p;
        }
        break;
      case 2:
        t.unmap(page, count);
        ref.erase(ref.lower_bound(page), ref.lower_bound(page + count));
        break;
      case 3: {
        const bool retry = rng.below(2);
        t.update(page, count, [&](Pte& p) { p.retry = retry; });
        for (auto it = ref.lower_bound(page); it != ref.end() && it->first < page + count; ++it)
          it->second.retry = retry;
        break;
      }
    }
    const std::uint64_t probe = rng.below(kPages), n = 1 + rng.below(30);
    REQUIRE(t.any_mapped(probe, n) ==
            (ref.lower_bound(probe) != ref.end() && ref.lower_bound(probe)->first < probe + n));
    if (round % 150 == 0) require_equal(t, ref, kPages);
  }
  require_equal(t, ref, kPages);
}

TEST_CASE("Page table: a scattered buffer of any size maps, retries and unmaps in linear time",
          "[mmu][page_table]") {
  // A buffer of 2^18 pages (1 GiB) in runs of 16 scattered pages (16,384 runs), mapped below
  // another of 4,096 runs that is already there: how many runs the table moves (memmove)
  // decides the time. Through the first page-by-page paths, each run of the first buffer
  // moved every run after it once per page (tens of billions: minutes).
  constexpr std::uint64_t kRun = 16, kRuns = 1u << 14, kAfterRuns = 4096;
  constexpr std::uint64_t kBase = 1u << 20;
  auto frame = [](std::uint64_t run, std::uint64_t k) { return ((run * 7919) % 65'536) * 64 + k; };
  PageTable t;
  for (std::uint64_t r = 0; r < kAfterRuns; ++r)
    for (std::uint64_t k = 0; k < kRun; ++k)
      t.map(2 * kBase + r * kRun + k, pte(frame(r + 3, k)));
  REQUIRE(t.runs() == kAfterRuns);
  CHECK(t.shifted() == 0);  // appended in order
  // Mapped as a range (as the driver maps an export's NPA range): its runs go in with one
  // move of the runs after them. Page by page, each of its runs would be one insert moving
  // them all (kRuns * kAfterRuns: 67 M).
  t.map(kBase, kRuns * kRun, [&](std::uint64_t i) { return pte(frame(i / kRun, i % kRun)); });
  REQUIRE(t.runs() == kAfterRuns + kRuns);
  REQUIRE(t.mapped_pages() == (kAfterRuns + kRuns) * kRun);
  CHECK(t.shifted() == kAfterRuns);
  CHECK(t.lookup(kBase + 5 * kRun + 3).frame == frame(5, 3));
  const std::uint64_t before = t.shifted();
  // Revoke: PTE.X on every page of the buffer, then off, one pass each.
  t.update(kBase, kRuns * kRun, [](Pte& p) { p.retry = true; });
  CHECK(t.lookup(kBase + 12'345).retry);
  CHECK_FALSE(t.lookup(2 * kBase).retry);
  CHECK(t.runs() == kAfterRuns + kRuns);
  t.update(kBase, kRuns * kRun, [](Pte& p) { p.retry = false; });
  CHECK(t.shifted() == before);  // as many runs as before: rewritten in place
  // A remap of one page in the middle, then a walk of the old paths on one run of it.
  t.map(kBase + 100, pte(5));
  CHECK(t.runs() == kAfterRuns + kRuns + 2);
  for (std::uint64_t k = 0; k < kRun; ++k)
    t.unmap(kBase + 32 + k);  // one run, in order: erased once
  CHECK(t.runs() == kAfterRuns + kRuns + 1);
  // Unmapping the buffer: its runs go in one erase, moving the other buffer's once.
  const std::uint64_t moved = t.shifted();
  t.unmap(kBase, kRuns * kRun);
  CHECK(t.shifted() - moved == kAfterRuns);
  CHECK(t.runs() == kAfterRuns);
  CHECK(t.mapped_pages() == kAfterRuns * kRun);
  CHECK_FALSE(t.any_mapped(kBase, kRuns * kRun));
  CHECK(t.any_mapped(kBase, kBase + 1));
}
