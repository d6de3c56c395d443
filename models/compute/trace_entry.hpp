// One access of an access trace (plain C++): what podsim replays, and what it records.
#pragma once

#include <cstdint>

#include "sim/core/units.hpp"

namespace podsim {

enum class TraceOp : std::uint8_t { Read, Write, Atomic };

struct TraceEntry {
  Time at;  // since the start of the GPU's access phase
  std::uint32_t gpu = 0;
  TraceOp op = TraceOp::Read;
  std::uint64_t va = 0;
  std::uint32_t size = 64;
  bool operator==(const TraceEntry&) const = default;
};

}  // namespace podsim
