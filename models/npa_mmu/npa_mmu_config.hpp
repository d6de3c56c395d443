#pragma once

#include "models/mmu/mmu.hpp"

namespace podsim {

// The exporter's NPA VM: its own TLB (no L1), a 3-level page table.
struct NpaMmuConfig : MmuConfig {
  NpaMmuConfig() : MmuConfig(TlbConfig{0, 1, Time{}}, TlbConfig{1024, 8, Time::ns(10)}, 3) {
    walkers = 16;
  }
};

}  // namespace podsim
