#pragma once

#include "sim/base/params.hpp"
#include "sim/base/units.hpp"

namespace podsim {

struct NpaMmuConfig {
  std::uint32_t tlb_entries = 64;
  std::uint32_t tlb_ways = 4;
  Time tlb_hit_latency = Time::ns(10);
  std::uint32_t walk_levels = 3;
  Time walk_level_latency = Time::ns(50);

  template <class V>
  void visit(V& v) {
    v.field("tlb_entries", tlb_entries, "NPA TLB entries", between<std::uint32_t>(1, 1u << 20));
    v.field("tlb_ways", tlb_ways, "NPA TLB associativity", between<std::uint32_t>(1, 1024));
    v.field("tlb_hit_latency", tlb_hit_latency, "NPA translation time on a TLB hit");
    v.field("walk_levels", walk_levels, "NPA page-table levels read on a TLB miss",
            between<std::uint32_t>(1, 5));
    v.field("walk_level_latency", walk_level_latency,
            "time to read one NPA page-table level during a walk");
  }
  template <class C>
  void check(C& c) const {
    if (tlb_entries % tlb_ways != 0) c.fail("tlb_ways", "must divide tlb_entries");
  }
};

}  // namespace podsim
