#include "sim/pod/workload_files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

#include "sim/pod/model_trace.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/trace.hpp"

namespace podsim {

namespace fs = std::filesystem;

std::vector<TraceEntry> resolve_workload_files(PodConfig& cfg,
                                               const std::optional<std::string>& config_path,
                                               const std::vector<std::string>& overrides) {
  // A relative path is relative to the config file that names it, or to the current directory
  // when a --set names it (docs/traces.md); each file is checked now, before anything is
  // written.
  auto set_by = [&](std::initializer_list<std::string_view> keys) {
    return std::any_of(overrides.begin(), overrides.end(), [&](const std::string& s) {
      return std::any_of(keys.begin(), keys.end(), [&](std::string_view k) {
        return s.size() > k.size() && s.compare(0, k.size(), k) == 0 && s[k.size()] == '=';
      });
    });
  };
  auto resolve = [&](std::string& path, bool from_set) {
    if (path.empty()) return;
    fs::path p(path);
    if (p.is_relative() && config_path && !from_set) p = fs::path(*config_path).parent_path() / p;
    path = fs::absolute(p).lexically_normal().string();
  };
  if (cfg.workload.kind == WorkloadKind::Model) {
    resolve(cfg.workload.model, set_by({"workload.model", "workload"}));
    resolve(cfg.workload.model_groups, set_by({"workload.model_groups", "workload"}));
    try {
      (void)load_model_trace(cfg.workload.model, cfg.pod.gpus,
                             cfg.workload.collective.chunk_size.count(), cfg.workload.model_groups);
    } catch (const ModelTraceError& e) {
      throw std::invalid_argument(fmt::format("model trace error: {}", e.what()));
    }
  }
  if (cfg.workload.traffic.trace.empty()) return {};
  resolve(cfg.workload.traffic.trace,
          set_by({"workload.traffic.trace", "workload.traffic", "workload"}));
  try {
    return load_trace(cfg.workload.traffic.trace, cfg.pod.gpus);
  } catch (const TraceError& e) {
    throw std::invalid_argument(fmt::format("trace error: {}", e.what()));
  }
}

}  // namespace podsim
