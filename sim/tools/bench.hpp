// `podsim bench`: how fast podsim simulates, on pods of several sizes under closed-loop and
// Poisson load. Each point is its own `podsim run` (one process, run one after the other so
// they do not disturb each other's timing), `rounds` times; it reports (medians of the rounds)
//  - remote accesses per host second in the access phases alone (setup and teardown excluded:
//    the run measures its phases with a host clock, see sim/pod/host_phases.hpp),
//  - host seconds of setup and of teardown, and the peak RSS of the process,
//  - the kernel's work per remote access in the access phases: dispatcher serves, dispatcher
//    activations by the SystemC kernel, and SystemC notifications (deterministic counts).
// Wall-clock figures depend on the machine; the counts do not.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace podsim::tools {

struct BenchOptions {
  std::vector<std::uint32_t> gpus = {8, 72, 1024};
  // "closed" (closed loop, `outstanding` 32 per GPU) and/or "poisson" (50% offered load).
  std::vector<std::string> loads = {"closed", "poisson"};
  // Remote accesses per point (spread evenly over the GPUs).
  std::uint64_t accesses = 800'000;
  // Runs of each point (1 to 100), in rounds (every point once per round). Host times are the
  // medians of the rounds; the results and deterministic counts must be the same in every
  // round (a point whose rounds differ fails).
  std::uint64_t rounds = 3;
  // The shipped configs that are also measured (helios-72, pod-1024), from this folder; empty:
  // none. A config missing from it is skipped, and the table says so; a folder the user gave
  // (`configs_given`) that does not exist is an error.
  std::string configs_dir = "configs";
  bool configs_given = false;
  bool shipped = true;
  // Also the default all_to_all as a new user runs it (every GPU importing from all others,
  // a 128-port switch), at each size up to 128, closed loop; and 8 initiators at the largest.
  bool all_peers = true;
  // --set for every point (after the bench's own); not of the keys a point's name states
  // (pod.gpus, workload.traffic.injection: --gpus and --loads choose them).
  std::vector<std::string> overrides;
  std::string out_dir = "podsim-bench";
  bool quiet = false;
};

int bench_command(const BenchOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace podsim::tools
