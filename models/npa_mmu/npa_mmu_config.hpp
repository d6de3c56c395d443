#pragma once

#include "models/mmu/mmu.hpp"

namespace podsim {

// The exporter's NPA VM: its own TLB (no L1), a 3-level page table.
struct NpaMmuConfig : MmuConfig {
  NpaMmuConfig() : MmuConfig(TlbConfig{0, 1, Time{}}, TlbConfig{1024, 8, Time::ns(10)}, 3) {
    walkers = 16;
  }
  // What-if (not in UALink 1.0 or the driver): requests carry the tag of the export their
  // mapping was made for, and the NPA MMU refuses one whose tag is not its PTE's.
  bool check_grant_tags = false;

  template <class V>
  void visit(V& v) {
    MmuConfig::visit(v);
    v.field("check_grant_tags", check_grant_tags,
            "what-if: each request carries the tag (handle lo, with its generation) of the export "
            "its importer's mapping was made for, and a request whose tag is not the NPA PTE's "
            "is refused (a remote fault): a stale mapping into a reused NPA range never reaches "
            "memory (docs/study-isolation.md)");
  }
};

}  // namespace podsim
