// Identifiers shared by every layer.
#pragma once

#include <cstdint>

namespace podsim {

using AccelId = std::uint16_t;  // 10-bit accelerator ID (up to 1,024 per pod)
constexpr unsigned kAccelIdBits = 10;
constexpr unsigned kMaxAccels = 1u << kAccelIdBits;

}  // namespace podsim
