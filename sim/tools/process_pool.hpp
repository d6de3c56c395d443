// Runs child processes, at most `jobs` at a time: what `podsim sweep` and `podsim regress`
// use to run one pod per process (SystemC elaborates once per process).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace podsim::tools {

struct ChildJob {
  std::vector<std::string> argv;  // argv[0] is the program's path
  std::string stdout_path;        // where its stdout and stderr go ("" : /dev/null)
  std::string stderr_path;
};

struct ChildResult {
  int exit_code = -1;  // -1: killed by a signal or not started
  int signal = 0;
};

// Runs every job, `jobs` at once, and returns their results in the jobs' order. `on_done`
// (optional) hears of each job as it finishes: its index and result.
std::vector<ChildResult> run_children(
    const std::vector<ChildJob>& jobs, unsigned parallel,
    const std::function<void(std::size_t, const ChildResult&)>& on_done = {});

// This program's own executable (so a command can run more of itself).
std::string self_executable();

}  // namespace podsim::tools
