#include "sim/kernel/stats_collector.hpp"

#include <systemc>

namespace podsim {
namespace {

void walk(const sc_core::sc_object& obj, const StatFn& fn, const StatSkip& skip) {
  if (skip && skip(obj)) return;
  if (const auto* hs = dynamic_cast<const HasStats*>(&obj)) {
    const StatGroup& g = hs->stat_group();
    std::string prefix = obj.name();
    if (!g.name().empty()) prefix += "." + g.name();
    g.for_each(prefix, fn);
  }
  for (const sc_core::sc_object* child : obj.get_child_objects())
    walk(*child, fn, skip);
}

}  // namespace

void collect_stats(const StatFn& fn, const StatSkip& skip) {
  for (const sc_core::sc_object* top : sc_core::sc_get_top_level_objects())
    walk(*top, fn, skip);
}

void collect_stats_under(const sc_core::sc_object& root, const StatFn& fn) {
  walk(root, fn, {});
}

}  // namespace podsim
