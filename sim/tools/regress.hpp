// `podsim regress`: run shipped configs briefly and compare their stats with golden results.
//
// DIR/cases.json names, for every config in the configs folder, the overrides that make its
// run short. Each case runs as its own `podsim run`; its condensed stats, digest and run
// outcome are compared with DIR/golden/NAME.json. --bless rewrites the goldens and prints
// what changed, for review (scripts/bless-goldens.sh).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace podsim::tools {

struct RegressOptions {
  std::string dir = "tests/regression";
  std::vector<std::string> cases;  // empty: all
  bool bless = false;
  unsigned jobs = 1;
};

// 0: every case matches its golden (or, blessing, the goldens were written); 1: a case
// differs, fails or has no golden; 2: the cases file or the options are wrong.
int regress_command(const RegressOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace podsim::tools
