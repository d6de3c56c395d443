#pragma once

#include "models/mmu/translation.hpp"

namespace podsim {

// The exporter's NPA VM (its own TLB, 3-level page table by default).
struct NpaMmuConfig : TranslationConfig {
  NpaMmuConfig() : TranslationConfig(3) {}
};

}  // namespace podsim
