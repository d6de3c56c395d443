#pragma once

#include "models/mmu/mmu.hpp"

namespace podsim {

// The GPUVM MMU: UTCL1 and UTCL2 TLBs, a 4-level page table, eight walkers.
struct GpuVmConfig : MmuConfig {
  std::uint32_t fault_log = 64;

  GpuVmConfig() : MmuConfig(TlbConfig{32, 32, Time::ns(5)}, TlbConfig{1024, 8, Time::ns(20)}, 4) {}

  template <class V>
  void visit(V& v) {
    MmuConfig::visit(v);
    v.field("fault_log", fault_log, "faults recorded with address and time (run.json)",
            between<std::uint32_t>(0, 1'000'000));
  }
};

}  // namespace podsim
