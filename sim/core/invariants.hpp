// Violations of the promises the protocol makes (no access served after release, every
// resource returned, no NPA range freed under live PTEs). Components report them here; a run
// with any violation fails, naming each one.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "sim/core/units.hpp"

namespace podsim {

struct Violation {
  Time at;
  std::string what;
};

class InvariantLog {
 public:
  void report(Time at, std::string what) { violations_.push_back({at, std::move(what)}); }
  const std::vector<Violation>& violations() const { return violations_; }
  bool ok() const { return violations_.empty(); }
  // Into time order (violations gathered from several ranks; same-time ones keep their order).
  void sort() {
    std::stable_sort(violations_.begin(), violations_.end(),
                     [](const Violation& a, const Violation& b) { return a.at < b.at; });
  }

 private:
  std::vector<Violation> violations_;
};

}  // namespace podsim
