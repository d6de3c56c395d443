// `podsim run`: load and check the config, build the pod, run it, write the results.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace podsim {

class RankComm;

struct RunOptions {
  std::optional<std::string> config_path;  // none: the embedded default pod
  std::vector<std::string> overrides;      // "key.path=value"
  std::optional<std::uint64_t> seed;
  std::string out_dir = "podsim-out";
  std::optional<std::string> access_log;  // write every access issued here (trace format)
  std::optional<std::string> timeline;    // write a Perfetto/Chrome trace-event timeline here
  std::uint64_t timeline_sample = 100;    // one access in this many per GPU goes in it
  std::uint64_t timeline_max_access_events = 200000;
  // Write digests of every GPU's state, taken as the first access phase starts, here.
  std::optional<std::string> state_digest;
  bool quiet = false;
  // A run with warnings (sim/pod/warnings.hpp) exits 3 instead of 0.
  bool warnings_as_errors = false;
  // The ranks this run is split across (sim/pod/partition.hpp), when more than one; only
  // rank 0 prints and writes.
  RankComm* ranks = nullptr;
};

// Exit codes: 0 ok; 1 the run failed (a workload error, an unfinished workload); 2 the
// config or command line is wrong (nothing is written then); 3 the run completed with
// warnings and warnings_as_errors was set (its outputs are written, the warnings in run.json).
int run_command(const RunOptions& opt, std::ostream& out, std::ostream& err);

const char* podsim_version();

}  // namespace podsim
