// stats.json: every stat of every component, found by walking the module tree.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "sim/core/json_write.hpp"

namespace sc_core {
class sc_object;
}

namespace podsim {

// How deep stats.json's "stats" object is: in the document's object.
inline constexpr std::size_t kStatsDepth = 2;

// For each object the walk meets, the text to write for it and everything below it instead
// of walking in (stats_text_under's, made by the rank that simulated it); nullopt: walk in.
using StatSplice = std::function<std::optional<std::string_view>(const sc_core::sc_object&)>;

// Every stat in the SystemC module tree as members of the object `w` is writing, keyed by
// full dotted path, in tree order: {"unit", "desc", "value"} or, for distributions,
// count/mean/percentiles (and buckets where asked). Streamed: no document is built. With
// `splice`, the objects it answers for are written as the text it gives.
void write_stats(config::PrettyJson& w, const StatSplice& splice = {});

// Appends to `text` the stats of `root` and of everything below it as write_stats writes
// them, as members continuing the "stats" object (PrettyJson::continue_object at
// kStatsDepth): what a split run's rank writes for rank 0 to splice in.
void stats_text_under(const sc_core::sc_object& root, std::string& text);

}  // namespace podsim
