// The one-screen answer printed after a run.
#pragma once

#include <iosfwd>
#include <string>

namespace podsim {

class Pod;

struct HostTiming {
  double seconds = 0;
};

void print_summary(const Pod& pod, const HostTiming& host, const std::string& out_dir,
                   std::ostream& out);

}  // namespace podsim
