// The one-screen answer printed after a run.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace podsim {

class Pod;

struct RunWarning;

struct HostTiming {
  double seconds = 0;
  // Of which (sim/pod/host_phases.hpp): setting up, the access phases, the teardown.
  double setup = 0, access = 0, teardown = 0;
};

// `files`: what the run wrote, in the order written (those in `out_dir` named alone).
void print_summary(const Pod& pod, const HostTiming& host, const std::string& out_dir,
                   const std::vector<std::string>& files, const std::vector<RunWarning>& warnings,
                   std::ostream& out);

}  // namespace podsim
