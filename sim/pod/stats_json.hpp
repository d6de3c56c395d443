// stats.json: every stat of every component, found by walking the module tree.
#pragma once

#include "sim/core/json_write.hpp"

namespace podsim {

// Every stat in the SystemC module tree as members of the object `w` is writing, keyed by
// full dotted path, in tree order: {"unit", "desc", "value"} or, for distributions,
// count/mean/percentiles (and buckets where asked). Streamed: no document is built.
void write_stats(config::PrettyJson& w);

}  // namespace podsim
