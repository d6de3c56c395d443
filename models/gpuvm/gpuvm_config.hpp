#pragma once

#include "models/mmu/translation.hpp"

namespace podsim {

// The GPUVM MMU (UTCL2 TLB, 4-level page table by default).
struct GpuVmConfig : TranslationConfig {
  GpuVmConfig() : TranslationConfig(4) {}
};

}  // namespace podsim
