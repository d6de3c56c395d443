#include "sim/kernel/stats_collector.hpp"

#include <systemc>

namespace podsim {
namespace {

void walk(const sc_core::sc_object& obj,
          const std::function<void(const std::string&, const Stat&)>& fn) {
  if (const auto* hs = dynamic_cast<const HasStats*>(&obj)) {
    const StatGroup& g = hs->stat_group();
    std::string prefix = obj.name();
    if (!g.name().empty()) prefix += "." + g.name();
    g.for_each(prefix, fn);
  }
  for (const sc_core::sc_object* child : obj.get_child_objects())
    walk(*child, fn);
}

}  // namespace

void collect_stats(const std::function<void(const std::string&, const Stat&)>& fn) {
  for (const sc_core::sc_object* top : sc_core::sc_get_top_level_objects())
    walk(*top, fn);
}

}  // namespace podsim
