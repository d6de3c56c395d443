// Reading, writing and documenting the pod config.
#pragma once

#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/core/config_io.hpp"
#include "sim/pod/pod_config.hpp"

namespace podsim {

// Strict: throws config::ConfigError naming the source, key path and expectation.
PodConfig read_pod_config(const config::ConfigDoc& doc);
// What every command starts from: the config file at `path` (none: the embedded default pod)
// with the `key.path=value` overrides applied in order, read strictly (throws as above).
PodConfig load_pod_config(const std::optional<std::string>& path,
                          const std::vector<std::string>& overrides);
// Every field, defaults filled in: a config file that reproduces `cfg` exactly.
boost::json::object write_pod_config(const PodConfig& cfg);
// The reference table of every key (Markdown).
std::string pod_config_reference();

}  // namespace podsim
