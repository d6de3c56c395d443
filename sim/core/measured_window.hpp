// The measured window of a run's access phases (workload.traffic.warmup): the measured remote
// accesses are those issued after their GPU's warm-up (without one, all of them), and the
// window runs from the first of them to complete to the last, all GPUs: what they moved over
// it is the rate the pod sustained (a window from their first issue would count the time the
// first of them spent in flight, about one latency, as if nothing had been delivered).
// Windowed stats divide by its length, known once the run has ended (the pod sets it before
// stats are written; until then it is empty and they are 0).
#pragma once

#include "sim/core/units.hpp"

namespace podsim {

struct MeasuredWindow {
  Time start, end;
  bool any = false;
  Time length() const { return any && end > start ? end - start : Time{}; }
  // `busy` as a fraction of the window (of `n` resources busy at once: channels).
  double share(Time busy, double n = 1.0) const {
    const double t = length().as_seconds();
    return t > 0 ? busy.as_seconds() / (t * n) : 0.0;
  }
};

}  // namespace podsim
