// stats.json: every stat of every component, found by walking the module tree.
#pragma once

#include <boost/json/object.hpp>

#include "sim/core/stats.hpp"

namespace podsim {

// One stat as JSON: {"unit", "desc", "value"} or, for distributions, count/mean/percentiles.
boost::json::object stat_to_json(const Stat& s);
// All stats in the SystemC module tree, keyed by full dotted path, in tree order.
boost::json::object collect_stats_json();

}  // namespace podsim
