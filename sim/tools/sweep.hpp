// `podsim sweep`: a grid of runs of one config, each point its own process, in parallel.
//
//   podsim sweep CONFIG --vary key.path=v1,v2,... [--vary ...] [--set ...] [-j N] --out DIR
//
// Every point's config is checked before anything runs (a bad value is exit 2, naming the
// point). Point i runs in DIR/points/NNN; DIR/sweep.csv and DIR/sweep.json get one row per
// point, in grid order (the first --vary outermost): the varied values, the exit code, then
// the headline stats; DIR/sweep.md (also printed) a Markdown table of chosen columns. Nothing
// in them depends on the host, so the same sweep writes the same files.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace podsim::tools {

struct Vary {
  std::string key;
  std::vector<std::string> values;  // as written (each a --set value)
};

// "key.path=v1,v2,..." -> Vary. Commas inside [...], {...} or "..." do not split, so
// "workload.initiators=[0,1],[2,3]" has two values. Throws std::invalid_argument.
Vary parse_vary(const std::string& text);

struct SweepOptions {
  std::optional<std::string> config_path;
  std::vector<Vary> vary;
  std::vector<std::string> overrides;    // applied to every point, before the varied values
  std::vector<std::string> extra_stats;  // more columns: "stat.path" or "stat.path:field"
  // The columns of the Markdown table (sweep.md, and stdout): empty means the mean and p99
  // remote latency, the achieved bandwidth and every extra stat.
  std::vector<std::string> table_columns;
  std::optional<std::uint64_t> seed;
  std::string out_dir = "podsim-sweep";
  unsigned jobs = 1;
  bool quiet = false;
  // Each point runs with --warnings-as-errors: a point with warnings exits 3 (a failed point).
  bool warnings_as_errors = false;
};

// The columns every sweep reports after the varied values: (column, stat, field).
struct Headline {
  const char* column;
  const char* stat;
  const char* field;
};
const std::vector<Headline>& headline_stats();

int sweep_command(const SweepOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace podsim::tools
