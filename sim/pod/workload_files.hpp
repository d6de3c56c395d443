// A workload's files (workload.traffic.trace, workload.model, workload.model_groups), found
// and checked as `podsim run` takes them; `podsim sweep` checks every point's the same way
// before any runs. Plain C++.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "models/compute/trace_entry.hpp"

namespace podsim {

struct PodConfig;

// The paths made absolute (relative to the config file that names them, or to the current
// directory when a --set does: `config_path` and `overrides` as a run's), then each file read
// and checked. Returns the trace's accesses (none without a trace). A bad file throws
// std::invalid_argument with the message a run prints ("trace error: FILE:LINE: ...").
std::vector<TraceEntry> resolve_workload_files(PodConfig& cfg,
                                               const std::optional<std::string>& config_path,
                                               const std::vector<std::string>& overrides);

}  // namespace podsim
