// Chakra execution traces (MLCommons Chakra, the traces ASTRA-sim reads) as model traces: a
// file per rank, PREFIX.0.et, PREFIX.1.et, ..., each a length-delimited GlobalMetadata and then
// its nodes (schema: sim/pod/chakra_et.proto). Rank r runs on GPU r. What each node becomes,
// and what is refused, is in docs/model-traces.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/pod/model_trace.hpp"

namespace podsim {

// Whether `prefix` names a Chakra trace (PREFIX.0.et exists).
bool is_chakra_trace(const std::string& prefix);

// Reads and checks a Chakra trace for a pod of `gpus` GPUs (see load_model_trace);
// `groups_path`, when not empty, is a JSON file of communicator groups, ASTRA-sim's form
// {"1": [0, 1, 2, 3], ...}, which the nodes' pg_name attributes name.
ModelTrace load_chakra_trace(const std::string& prefix, std::uint32_t gpus,
                             std::uint64_t chunk_size, const std::string& groups_path);
// The same from the files' bytes, rank by rank (named PREFIX.R.et in messages), and the groups
// file's text (`groups_name` empty: none).
ModelTrace parse_chakra_trace(const std::vector<std::string>& files, const std::string& prefix,
                              std::uint32_t gpus, std::uint64_t chunk_size,
                              const std::string& groups_text, const std::string& groups_name);

}  // namespace podsim
