// Runs the podsim binary as a user would, in a fresh output directory, and reads what it
// wrote. Used by the tests of the command line, the outputs and the validation tier. The
// folders made here (output directories, write_temp_file's) are removed when the test process
// exits, unless PODSIM_TEST_KEEP=1.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace podsim::test {

struct PodsimRun {
  int exit_code = -1;
  std::string out, err;
  std::string out_dir;
  std::optional<boost::json::value> stats, config, run;  // what the run wrote, if anything
  bool out_dir_exists = false;

  // A stat's field from stats.json, e.g. stat("pod.summary.remote_latency", "mean").
  double stat(const std::string& path, const std::string& field = "value") const;
};

// `args` after the binary name; "--out <fresh dir>" is added for `run`.
PodsimRun run_podsim(const std::vector<std::string>& args, bool add_out = true);
// The same with the address space limited to `kib` KiB (ulimit -v): running out of memory.
PodsimRun run_podsim_limited(unsigned long kib, const std::vector<std::string>& args,
                             bool add_out = true);
// The same after `shell_prefix` (shell commands, e.g. "ulimit -f 100; ").
PodsimRun run_podsim_after(const std::string& shell_prefix, const std::vector<std::string>& args,
                           bool add_out = true);
// The same under `mpirun --oversubscribe -n RANKS` (allowed to run as root, as CI does).
PodsimRun run_podsim_mpi(int ranks, const std::vector<std::string>& args, bool add_out = true);
// Two ranks started with their own command lines (an MPMD launch: `mpirun -n 1 podsim RANK0 :
// -n 1 podsim RANK1`), stopped after 300 s (exit 124); no --out is added. `rank1_env`
// (e.g. "TMPDIR=/x") is rank 1's environment besides mpirun's.
PodsimRun run_podsim_mpi_apart(const std::vector<std::string>& rank0,
                               const std::vector<std::string>& rank1,
                               const std::string& rank1_env = "");

std::string source_path(const std::string& relative);
std::string write_temp_file(const std::string& name, const std::string& text);
// A file's whole text ("" when it cannot be read).
std::string slurp(const std::string& path);
// A CSV file with a header line (no quoted commas): a row each, by column name.
std::vector<std::map<std::string, std::string>> read_csv(const std::string& path);

}  // namespace podsim::test
