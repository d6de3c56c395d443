// The measured window of a run's access phases (workload.traffic.warmup): the measured remote
// accesses are those issued after their GPU's warm-up (without one, all of them), and the
// window runs from the first of them issued to the last completed, all GPUs. Everything they
// moved, and every packet of theirs, falls inside it, so a rate or a utilisation over it is
// never above the truth; it is below by about one latency over the window's length (the
// first accesses' flight, with nothing yet delivered), which a run warns about when that is
// over 5% (window_too_short). (Each port, link and VRAM measures its own utilisation over its
// own part of it: from the first measured access reaching it to the last leaving.)
#pragma once

#include "sim/core/units.hpp"

namespace podsim {

struct MeasuredWindow {
  Time start, end;
  bool any = false;
  Time length() const { return any && end > start ? end - start : Time{}; }
};

}  // namespace podsim
