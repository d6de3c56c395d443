// NPA (Network Physical Address) layout shared by the hardware models and the driver model
// (plain C++, no SystemC). Byte address: bits 50:41 = GPU ID, bits 40:0 = offset in that
// GPU's 2 TiB window. In pages: GPU ID at bits 38:29, window page at bits 28:0.
#pragma once

#include <cstdint>

#include "sim/core/ids.hpp"

namespace podsim {

constexpr unsigned kNpaIdShift = 41;         // in a byte address
constexpr unsigned kNpaWindowPageBits = 29;  // in a page number
constexpr std::uint64_t kNpaWindowPageMask = (1ull << kNpaWindowPageBits) - 1;

inline AccelId npa_accel(std::uint64_t npa_byte_address) {
  return static_cast<AccelId>((npa_byte_address >> kNpaIdShift) & (kMaxAccels - 1));
}

// How the exporter reads bits 50:41 of an incoming NPA (the vPod's addr_mode).
enum class NpaAddrMode : std::uint8_t {
  SourceAliasing = 0,        // aliased away: one NPA range serves every importer
  SourceIdentification = 1,  // the requester's ID: each importer has its own window
};

}  // namespace podsim
