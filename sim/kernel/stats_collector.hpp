// Finds every component that exposes stats by walking the SystemC object tree, and hands
// each stat to a callback with its full dotted path ("pod.gpu3.vram.reads").
#pragma once

#include <functional>
#include <string>

#include "sim/core/stats.hpp"

namespace podsim {

void collect_stats(const std::function<void(const std::string& path, const Stat& s)>& fn);

}  // namespace podsim
