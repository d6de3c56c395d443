// Finds every component that exposes stats by walking the SystemC object tree, and hands
// each stat to a callback with its full dotted path ("pod.gpu3.vram.reads").
#pragma once

#include <functional>
#include <string>

#include "sim/core/stats.hpp"

namespace sc_core {
class sc_object;
}

namespace podsim {

using StatFn = std::function<void(const std::string& path, const Stat& s)>;
// Asked of each object before the walk enters it: true keeps the walk out of it and of
// everything below it (whatever the callback did with them instead).
using StatSkip = std::function<bool(const sc_core::sc_object& obj)>;

// Every stat of the whole tree, depth first: an object's own stats, then its children's
// (not entering the objects `skip`, when given, says to keep out of).
void collect_stats(const StatFn& fn, const StatSkip& skip = {});
// The stats of `root` and of everything below it, in the order collect_stats meets them.
void collect_stats_under(const sc_core::sc_object& root, const StatFn& fn);

}  // namespace podsim
