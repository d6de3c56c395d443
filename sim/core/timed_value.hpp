// A value that changes at a few simulated times (a port going down and up, a link's stalls),
// with what it was for something that happened at an earlier time. A split run hands a packet
// from another rank to its end later than it was sent, and the end must decide as it would
// have then.
#pragma once

#include <utility>
#include <vector>

#include "sim/core/units.hpp"

namespace podsim {

template <class T>
class TimedValue {
 public:
  explicit TimedValue(T initial = T{}) : now_(initial), initial_(initial) {}
  // It becomes `v` at `at` (at or after every earlier change).
  void set(Time at, T v) {
    now_ = v;
    changes_.emplace_back(at, v);
  }
  const T& now() const { return now_; }
  // What it was for something that happened at `t`: changes made at that very time come after
  // it (the pod's event queue serves its work before a scenario step's).
  T before(Time t) const {
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it)
      if (it->first < t) return it->second;
    return initial_;
  }

 private:
  T now_;
  T initial_;
  std::vector<std::pair<Time, T>> changes_;  // a few: one per change
};

}  // namespace podsim
