// What GpuVm and NpaMmu share: a TLB in front of a page table, and what a translation costs
// (the hit latency, plus a walk of every level on a miss).
#pragma once

#include <optional>

#include "models/mmu/tlb.hpp"
#include "sim/base/params.hpp"
#include "sim/base/units.hpp"

namespace podsim {

struct TranslationConfig {
  std::uint32_t tlb_entries = 64;
  std::uint32_t tlb_ways = 4;
  Time tlb_hit_latency = Time::ns(10);
  std::uint32_t walk_levels;
  Time walk_level_latency = Time::ns(50);

  explicit TranslationConfig(std::uint32_t levels) : walk_levels(levels) {}
  Time walk_time() const { return walk_level_latency * walk_levels; }

  template <class V>
  void visit(V& v) {
    v.field("tlb_entries", tlb_entries, "TLB entries", between<std::uint32_t>(1, 1u << 20));
    v.field("tlb_ways", tlb_ways, "TLB associativity (entries must be a multiple)",
            between<std::uint32_t>(1, 1024));
    v.field("tlb_hit_latency", tlb_hit_latency, "translation time on a TLB hit");
    v.field("walk_levels", walk_levels, "page-table levels read on a TLB miss",
            between<std::uint32_t>(1, 5));
    v.field("walk_level_latency", walk_level_latency,
            "time to read one page-table level during a walk");
  }
  template <class C>
  void check(C& c) const {
    if (tlb_entries % tlb_ways != 0) c.fail("tlb_ways", "must divide tlb_entries");
  }
};

template <class V>
struct Translation {
  std::optional<V> entry;  // nothing: no valid mapping
  Time cost;
  bool tlb_hit = false;
};

// Looks `page` up in the TLB; on a miss, `walk()` reads the page table (an optional entry)
// and a found entry is filled into the TLB.
template <class V, class Walk>
Translation<V> translate_page(Tlb<V>& tlb, const TranslationConfig& cfg, std::uint32_t space,
                              std::uint64_t page, Walk&& walk) {
  if (const V* hit = tlb.lookup(space, page)) return {*hit, cfg.tlb_hit_latency, true};
  std::optional<V> found = walk();
  if (found) tlb.insert(space, page, *found);
  return {found, cfg.tlb_hit_latency + cfg.walk_time(), false};
}

}  // namespace podsim
