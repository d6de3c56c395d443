// The translation machinery GpuVm and NpaMmu share, in plain C++: an L1 and an L2 TLB, a
// page-walk cache, and a pool of page walkers, in front of a PageTable.
//
// A translation costs the L1 latency; an L1 miss adds the L2 latency; an L2 miss takes a free
// walker (waiting for one if all are busy) that reads one page-table entry per level below
// the deepest level the page-walk cache holds (a 2 MiB mapping ends a level early), each read
// a memory access of walk_level_latency. Found entries fill the TLBs for their fragment.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "models/mmu/page_table.hpp"
#include "models/mmu/tlb.hpp"
#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

struct TlbConfig {
  std::uint32_t entries;
  std::uint32_t ways;
  Time latency;
  Replacement replacement = Replacement::Lru;

  template <class V>
  void visit(V& v) {
    v.field("entries", entries, "entries (0: no such TLB, and no lookup time)",
            between<std::uint32_t>(0, 1u << 20));
    v.field("ways", ways,
            "associativity (entries must be a multiple; at most 4,096, so a line's tag holds "
            "its replacement rank and a 55-bit address's page; a VMID up to 15)",
            between<std::uint32_t>(1, 4096));
    v.field("latency", latency, "lookup time");
    v.choice("replacement", replacement, "which way a fill evicts",
             std::span<const EnumName<Replacement>>(kReplacementNames));
  }
  template <class C>
  void check(C& c) const {
    if (entries % ways != 0) c.fail("ways", "must divide entries");
  }
};

struct MmuConfig {
  TlbConfig l1;
  TlbConfig l2;
  std::uint32_t walk_levels;
  Time walk_level_latency = Time::ns(50);
  std::uint32_t walkers = 8;
  std::uint32_t pwc_entries = 32;
  Time flush_latency_lightweight = Time::ns(500);
  Time flush_latency_heavyweight = Time::us(1);

  MmuConfig(TlbConfig l1_, TlbConfig l2_, std::uint32_t levels)
      : l1(l1_), l2(l2_), walk_levels(levels) {}

  template <class V>
  void visit(V& v) {
    v.section("l1", l1, "the first-level TLB");
    v.section("l2", l2, "the second-level TLB");
    v.field("walk_levels", walk_levels, "page-table levels (a walk reads one entry per level)",
            between<std::uint32_t>(1, 5));
    v.field("walk_level_latency", walk_level_latency,
            "one page-table read during a walk (a memory access)");
    v.field("walkers", walkers, "page walks that can run at once", between<std::uint32_t>(1, 4096));
    v.field("pwc_entries", pwc_entries,
            "page-walk cache entries holding upper-level entries (0: none)",
            between<std::uint32_t>(0, 1u << 16));
    v.field("flush_latency_lightweight", flush_latency_lightweight,
            "a lightweight invalidation: TLB entries only");
    v.field("flush_latency_heavyweight", flush_latency_heavyweight,
            "a heavyweight invalidation: TLBs and the page-walk cache, waiting for translations "
            "in flight");
  }
};

class MmuCore {
 public:
  struct Outcome {
    std::optional<Pte> pte;  // the page's own PTE (frame resolved); nothing: fault
    Time done;               // when the translation is known
    bool l1_hit = false, l2_hit = false;
    std::uint32_t levels_read = 0;
    Time walker_wait;
  };

  MmuCore(const MmuConfig& cfg, Rng rng);

  // What is cached, line by line (the TLBs' tags, replacement order and entries; the page-walk
  // cache's tags and use order), and when each walker is next free.
  void digest(Digest& d) const;
  // Translates `page` of address space `space` at `now` through `table` (null: empty).
  Outcome translate(std::uint32_t space, std::uint64_t page, Time now, const PageTable* table);
  // Invalidates cached translations (of every space, or one; of a range of pages, or all).
  // What it costs.
  Time flush(FlushKind kind, std::optional<std::uint32_t> space = std::nullopt,
             std::uint64_t first_page = 0, std::uint64_t pages = 0);

 private:
  // The page-walk cache's lines: a tag word each (valid, level, address space, prefix), side
  // by side for the scan, and when each was last used.
  static std::uint64_t pwc_tag(std::uint32_t space, std::uint32_t level, std::uint64_t prefix);
  std::uint32_t pwc_deepest(std::uint32_t space, std::uint64_t page);
  void pwc_fill(std::uint32_t space, std::uint64_t page, std::uint32_t leaf_level);

  // A TLB entry: the fragment's first PTE, and when the walk that filled it completes (a
  // lookup hitting an entry still being walked waits for it).
  struct Cached {
    Pte pte;
    Time ready;
  };
  MmuConfig cfg_;
  Tlb<Cached> l1_, l2_;
  std::vector<std::uint64_t> pwc_tags_, pwc_last_use_;
  std::uint64_t pwc_clock_ = 0;
  std::vector<Time> walker_free_;
};

}  // namespace podsim
