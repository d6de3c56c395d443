#include <catch2/catch.hpp>

#include <vector>

#include "models/mmu/mmu.hpp"
#include "models/mmu/tag_scan.hpp"
#include "models/mmu/tlb.hpp"

using namespace podsim;

namespace {
bool hit(Tlb<int>& t, std::uint32_t space, std::uint64_t page) {
  return t.lookup(space, page).value != nullptr;
}
}  // namespace

TEST_CASE("a TLB hits what it holds and misses what it does not", "[tlb]") {
  Tlb<int> tlb(8, 2);  // 4 sets of 2 ways
  CHECK(tlb.sets() == 4);
  CHECK_FALSE(hit(tlb, 0, 5));
  tlb.insert(0, 5, 0, 50);
  REQUIRE(hit(tlb, 0, 5));
  CHECK(*tlb.lookup(0, 5).value == 50);
  CHECK_FALSE(hit(tlb, 1, 5));  // another address space
  tlb.insert(0, 5, 0, 51);      // refresh in place
  CHECK(*tlb.lookup(0, 5).value == 51);
  Tlb<int> none(0, 1);  // no TLB at all
  none.insert(0, 5, 0, 1);
  CHECK_FALSE(hit(none, 0, 5));
}

TEST_CASE("a TLB holds no host memory until its first fill, and looks the same before", "[tlb]") {
  for (auto policy : {Replacement::Lru, Replacement::Fifo, Replacement::Random}) {
    Tlb<int> tlb(64, 8, policy);
    CHECK(tlb.host_bytes() == 0);
    // Lookups and invalidations of a TLB never filled miss and change nothing.
    CHECK_FALSE(hit(tlb, 0, 5));
    tlb.invalidate_all();
    tlb.invalidate_space(0);
    tlb.invalidate_range(0, 0, 100);
    CHECK(tlb.host_bytes() == 0);
    // Its lines read as a filled-then-emptied TLB's: empty, each set's ranks in order.
    auto lines = [](const Tlb<int>& t) {
      std::vector<std::uint64_t> words;
      t.for_each_line([&](std::uint64_t w, const int* v) {
        words.push_back(w);
        CHECK(v == nullptr);
      });
      return words;
    };
    const std::vector<std::uint64_t> before = lines(tlb);
    CHECK(before.size() == 64);
    tlb.insert(0, 5, 0, 50);
    CHECK(tlb.host_bytes() >= 64 * (sizeof(std::uint64_t) + sizeof(int)));
    CHECK(*tlb.lookup(0, 5).value == 50);
    tlb.invalidate_all();
    CHECK_FALSE(hit(tlb, 0, 5));
    CHECK(lines(tlb) == before);  // the first fill took way 0, already its set's most recent
  }
}

TEST_CASE("a fragment entry covers its 2^f pages", "[tlb]") {
  Tlb<int> tlb(16, 4);
  tlb.insert(0, 35, kFragment64K, 7);  // pages 32..47
  for (std::uint64_t p = 32; p < 48; ++p) {
    auto h = tlb.lookup(0, p);
    REQUIRE(h.value);
    CHECK(h.fragment == kFragment64K);
  }
  CHECK_FALSE(hit(tlb, 0, 48));
  tlb.insert(0, 1000, kFragment2M, 9);  // pages 512..1023
  CHECK(hit(tlb, 0, 512));
  CHECK(hit(tlb, 0, 1023));
  tlb.invalidate_range(0, 40, 1);  // overlaps the 64 KiB entry only
  CHECK_FALSE(hit(tlb, 0, 33));
  CHECK(hit(tlb, 0, 600));
  tlb.insert(1, 2100, 8, 3);  // a 1 MiB fragment: pages 2048..2303 of space 1
  CHECK(hit(tlb, 1, 2048));
  CHECK(hit(tlb, 1, 2303));
  CHECK_FALSE(hit(tlb, 1, 2304));
  CHECK_FALSE(hit(tlb, 0, 2100));  // another space
  CHECK(tlb.lookup(1, 2200).fragment == 8);
  CHECK_THROWS_AS(tlb.insert(0, 0, kMaxFragment + 1, 1), std::out_of_range);
}

TEST_CASE("a 4,096-way TLB holds a 55-bit address's page, and a lookup beyond it misses", "[tlb]") {
  Tlb<int> tlb(4096, 4096);
  const std::uint64_t page = (1ull << (55 - 12)) - 1;  // the last page of a 55-bit space
  tlb.insert(15, page, 0, 7);
  CHECK(hit(tlb, 15, page));
  CHECK_FALSE(hit(tlb, 14, page));
  // A page no line can hold (an address far beyond any mapping) is a miss, not an error: the
  // walk then finds no mapping and the access faults.
  CHECK_FALSE(hit(tlb, 0, 1ull << 52));
  CHECK_FALSE(hit(tlb, 16, 0));  // an address space above 15 likewise
  CHECK_THROWS_AS(tlb.insert(0, 1ull << 52, 0, 1), std::out_of_range);
}

TEST_CASE("LRU, FIFO and random replacement", "[tlb]") {
  // 2 sets of 2 ways; pages 0, 2, 4 share set 0.
  Tlb<int> lru(4, 2, Replacement::Lru);
  lru.insert(0, 0, 0, 1);
  lru.insert(0, 2, 0, 2);
  CHECK(hit(lru, 0, 0));   // 0 is now more recent than 2
  lru.insert(0, 4, 0, 3);  // evicts 2
  CHECK_FALSE(hit(lru, 0, 2));
  CHECK(hit(lru, 0, 0));

  Tlb<int> fifo(4, 2, Replacement::Fifo);
  fifo.insert(0, 0, 0, 1);
  fifo.insert(0, 2, 0, 2);
  CHECK(hit(fifo, 0, 0));   // use does not matter
  fifo.insert(0, 4, 0, 3);  // evicts the oldest fill: 0
  CHECK_FALSE(hit(fifo, 0, 0));
  CHECK(hit(fifo, 0, 2));

  // Random: seeded, so the same seed evicts the same ways.
  auto victims = [](std::uint64_t seed) {
    Tlb<int> r(4, 2, Replacement::Random, Rng(seed));
    std::vector<bool> out;
    for (std::uint64_t p = 0; p < 40; p += 2) {
      r.insert(0, p, 0, 1);
      out.push_back(hit(r, 0, p - 2 < p ? p - 2 : 0));
    }
    return out;
  };
  CHECK(victims(3) == victims(3));
}

TEST_CASE("invalidation by space, range and all", "[tlb]") {
  Tlb<int> tlb(64, 4);
  for (std::uint64_t p = 0; p < 16; ++p) {
    tlb.insert(0, p, 0, 1);
    tlb.insert(1, p, 0, 1);
  }
  tlb.invalidate_range(0, 4, 4);
  CHECK(hit(tlb, 0, 3));
  CHECK_FALSE(hit(tlb, 0, 4));
  CHECK_FALSE(hit(tlb, 0, 7));
  CHECK(hit(tlb, 0, 8));
  tlb.invalidate_space(1);
  CHECK_FALSE(hit(tlb, 1, 0));
  CHECK(hit(tlb, 0, 0));
  tlb.invalidate_all();
  CHECK_FALSE(hit(tlb, 0, 0));
  CHECK_THROWS(Tlb<int>(10, 4));
}

namespace {
MmuConfig small_mmu() {
  MmuConfig c(TlbConfig{4, 4, Time::ns(5)}, TlbConfig{16, 4, Time::ns(20)}, 4);
  c.walk_level_latency = Time::ns(100);
  c.walkers = 2;
  c.pwc_entries = 16;
  return c;
}
PageTable table_of(std::uint64_t pages, std::uint8_t fragment = 0) {
  PageTable t;
  for (std::uint64_t p = 0; p < pages; ++p) {
    Pte pte;
    pte.target = PteTarget::Vram;
    pte.writable = true;
    pte.frame = 4096 + p;
    pte.fragment = fragment;
    t.map(p, pte);
  }
  return t;
}
}  // namespace

TEST_CASE("MMU: hits, misses and walk costs are what the pattern implies", "[mmu]") {
  MmuCore mmu(small_mmu(), Rng(1));
  const PageTable t = table_of(64);
  Time now;
  // A cold access walks all 4 levels.
  auto first = mmu.translate(0, 0, now, &t);
  REQUIRE(first.pte);
  CHECK(first.pte->frame == 4096);
  CHECK_FALSE(first.l1_hit);
  CHECK_FALSE(first.l2_hit);
  CHECK(first.levels_read == 4);
  CHECK(first.done == now + Time::ns(5 + 20 + 4 * 100));
  // The next page shares the upper levels: the page-walk cache leaves one level to read.
  now += Time::us(1);
  auto second = mmu.translate(0, 1, now, &t);
  CHECK(second.levels_read == 1);
  CHECK(second.done == now + Time::ns(5 + 20 + 100));
  // Again: an L1 hit.
  auto again = mmu.translate(0, 1, now + Time::us(1), &t);
  CHECK(again.l1_hit);
  CHECK(again.done == now + Time::us(1) + Time::ns(5));

  // Sweeping 8 pages twice with a 4-entry L1 and a 16-entry L2: the first sweep misses
  // everywhere (8 walks), the second hits L2 for all 8 (the L1 holds only the last 4, and each
  // sweep evicts them in order).
  MmuCore m2(small_mmu(), Rng(1));
  int walks = 0, l1 = 0, l2 = 0;
  for (int sweep = 0; sweep < 2; ++sweep)
    for (std::uint64_t p = 0; p < 8; ++p) {
      auto o = m2.translate(0, p, Time::us(10 * (sweep * 8 + p + 1)), &t);
      walks += !o.l1_hit && !o.l2_hit;
      l1 += o.l1_hit;
      l2 += o.l2_hit;
    }
  CHECK(walks == 8);
  CHECK(l1 == 0);
  CHECK(l2 == 8);
}

TEST_CASE("MMU: a TLB of no entries is no TLB and costs no lookup time", "[mmu]") {
  const PageTable t = table_of(64);
  for (const bool no_l1 : {true, false}) {
    MmuConfig c = small_mmu();
    (no_l1 ? c.l1 : c.l2).entries = 0;  // its latency (5 or 20 ns) stays set
    MmuCore mmu(c, Rng(1));
    const Time now = Time::us(1);
    INFO((no_l1 ? "no L1" : "no L2"));
    const auto cold = mmu.translate(0, 0, now, &t);
    CHECK(cold.done == now + Time::ns((no_l1 ? 20 : 5) + 4 * 100));
    // Looked up again: a hit in the TLB there is, after its own lookup time only.
    const auto warm = mmu.translate(0, 0, now + Time::us(1), &t);
    CHECK(warm.l1_hit == !no_l1);
    CHECK(warm.l2_hit == no_l1);
    CHECK(warm.done == now + Time::us(1) + Time::ns(no_l1 ? 20 : 5));
  }
}

TEST_CASE("MMU: fragments widen the TLB's reach, 2 MiB pages shorten the walk", "[mmu]") {
  MmuCore mmu(small_mmu(), Rng(1));
  const PageTable t = table_of(512, kFragment2M);
  auto cold = mmu.translate(0, 7, Time{}, &t);
  CHECK(cold.levels_read == 3);  // a 2 MiB page: the walk ends at level 1
  int walks = 0;
  for (std::uint64_t p = 0; p < 512; ++p) {
    auto o = mmu.translate(0, p, Time::us(1 + p), &t);
    walks += !o.l1_hit && !o.l2_hit;
    REQUIRE(o.pte);
    CHECK(o.pte->frame == 4096 + p);  // each page still reaches its own frame
  }
  CHECK(walks == 0);  // one entry covers all 512 pages
}

TEST_CASE("MMU: walks queue for walkers, and flushes clear what their kind clears", "[mmu]") {
  MmuCore mmu(small_mmu(), Rng(1));  // 2 walkers
  const PageTable t = table_of(4096);
  // Three cold misses at once, apart at every level (no page-walk cache help; the other two
  // are unmapped, which costs a walk all the same): the third waits for a walker.
  auto a = mmu.translate(0, 0, Time{}, &t);
  auto b = mmu.translate(0, 1ull << 27, Time{}, &t);
  auto c = mmu.translate(0, 2ull << 27, Time{}, &t);
  CHECK(b.levels_read == 4);
  CHECK(a.walker_wait == Time{});
  CHECK(b.walker_wait == Time{});
  CHECK(c.walker_wait == a.done - Time::ns(25));
  // A hit on an entry whose walk is still running waits for it.
  auto d = mmu.translate(0, 0, Time::ns(30), &t);
  CHECK(d.l1_hit);
  CHECK(d.done == a.done);

  CHECK(mmu.flush(FlushKind::Lightweight, 0) == small_mmu().flush_latency_lightweight);
  auto after_light = mmu.translate(0, 1, Time::us(10), &t);
  CHECK(after_light.levels_read == 1);  // the page-walk cache survived
  CHECK(mmu.flush(FlushKind::Heavyweight, 0) == small_mmu().flush_latency_heavyweight);
  auto after_heavy = mmu.translate(0, 2, Time::us(20), &t);
  CHECK(after_heavy.levels_read == 4);
  // A fault: no valid PTE, nothing cached.
  auto fault = mmu.translate(0, 99'999, Time::us(30), &t);
  CHECK_FALSE(fault.pte);
  CHECK_FALSE(mmu.translate(0, 99'999, Time::us(31), &t).pte);
}

namespace {
// A plain reference: per set, the lines in recency order (most recent first), each a page,
// fragment and space; LRU victim the last, an empty line (never filled, or invalidated) taken
// before it, the lowest-numbered first.
struct ReferenceTlb {
  struct Line {
    bool valid = false;
    std::uint32_t space = 0;
    std::uint64_t key = 0;
    std::uint8_t f = 0;
    std::uint64_t last_use = 0;
  };
  std::uint32_t ways, sets;
  std::vector<Line> lines;
  std::uint64_t clock = 0;
  bool lru = true;  // false: FIFO (a hit leaves the order alone; a fill goes to the front)
  ReferenceTlb(std::uint32_t entries, std::uint32_t w, bool by_use)
      : ways(w), sets(entries / w), lines(entries), lru(by_use) {}
  std::size_t base(std::uint64_t key, std::uint8_t f) const {
    return ((key ^ (static_cast<std::uint64_t>(f) << 20)) % sets) * ways;
  }
  bool lookup(std::uint32_t space, std::uint64_t page) {
    for (int f = kMaxFragment; f >= 0; --f) {
      const std::size_t b = base(page >> f, f);
      for (std::size_t i = b; i < b + ways; ++i)
        if (lines[i].valid && lines[i].space == space && lines[i].key == page >> f &&
            lines[i].f == f) {
          if (lru) lines[i].last_use = ++clock;
          return true;
        }
    }
    return false;
  }
  void insert(std::uint32_t space, std::uint64_t page, std::uint8_t f) {
    const std::size_t b = base(page >> f, f);
    std::size_t victim = SIZE_MAX;
    for (std::size_t i = b; i < b + ways && victim == SIZE_MAX; ++i)
      if (lines[i].valid && lines[i].space == space && lines[i].key == page >> f && lines[i].f == f)
        victim = i;
    for (std::size_t i = b; i < b + ways && victim == SIZE_MAX; ++i)
      if (!lines[i].valid) victim = i;
    if (victim == SIZE_MAX) {
      victim = b;
      for (std::size_t i = b; i < b + ways; ++i)
        if (lines[i].last_use < lines[victim].last_use) victim = i;
    }
    lines[victim] = Line{true, space, page >> f, f, ++clock};
  }
  void invalidate_range(std::uint32_t space, std::uint64_t first, std::uint64_t pages) {
    for (Line& l : lines) {
      const std::uint64_t lo = l.key << l.f, hi = lo + (1ull << l.f);
      if (l.valid && l.space == space && lo < first + pages && first < hi) l.valid = false;
    }
  }
};
}  // namespace

TEST_CASE("a TLB's replacement is exact LRU or FIFO, in narrow sets and in wide ones", "[tlb]") {
  // 8-way sets take the plain loops; a 32-way (fully associative) and a 64-way set the
  // vector scans: every lookup must hit exactly when the reference hits.
  for (Replacement policy : {Replacement::Lru, Replacement::Fifo})
    for (auto [entries, ways] :
         {std::pair<std::uint32_t, std::uint32_t>{64, 8}, {32, 32}, {128, 64}}) {
      Tlb<int> tlb(entries, ways, policy);
      ReferenceTlb ref(entries, ways, policy == Replacement::Lru);
      Rng rng(entries * 31 + ways);
      std::uint64_t hits = 0;
      for (int step = 0; step < 20000; ++step) {
        const std::uint32_t space = static_cast<std::uint32_t>(rng.below(2));
        const std::uint64_t page = rng.below(3 * entries);
        // Mostly single pages, some fragments of every size.
        const auto f =
            static_cast<std::uint8_t>(rng.below(3) == 0 ? rng.below(kMaxFragment + 1) : 0);
        const bool hit = tlb.lookup(space, page).value != nullptr;
        INFO((policy == Replacement::Lru ? "LRU" : "FIFO")
             << " entries " << entries << " ways " << ways << " step " << step);
        REQUIRE(hit == ref.lookup(space, page));
        hits += hit;
        if (!hit) {
          tlb.insert(space, page, f, 1);
          ref.insert(space, page, f);
        }
        if (rng.below(500) == 0) {
          const std::uint64_t first = rng.below(3 * entries);
          tlb.invalidate_range(space, first, 8);
          ref.invalidate_range(space, first, 8);
        }
      }
      CHECK(hits > 2000);  // the comparison covered hits as well as misses
    }
}

TEST_CASE("the vector tag scans give the plain loops' answers", "[tlb]") {
  if (!tag_scan::avx2()) {
    WARN("this CPU has no AVX2: only the plain loops run here");
    return;
  }
  Rng rng(7);
  for (std::size_t n : {0, 1, 3, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64, 67, 4096}) {
    std::vector<std::uint64_t> tags(n);
    const std::uint64_t rank_mask = 0x3F;
    for (int round = 0; round < 200; ++round) {
      for (auto& t : tags)  // few distinct values, so matches happen anywhere (or nowhere)
        t = rng.below(4) << 6 | rng.below(64) | (rng.below(2) ? 1ull << 63 : 0);
      const std::uint64_t want = rng.below(4) << 6, keep = ~rank_mask & ~(1ull << 63);
      INFO("n " << n << " round " << round);
      REQUIRE(tag_scan::find_avx2(tags.data(), n, want, keep) ==
              tag_scan::find_plain(tags.data(), n, want, keep));
      const std::uint64_t rank = rng.below(65);
      std::vector<std::uint64_t> a = tags, b = tags;
      tag_scan::demote_avx2(a.data(), n, rank, rank_mask);
      tag_scan::demote_plain(b.data(), n, rank, rank_mask);
      REQUIRE(a == b);
    }
  }
}
