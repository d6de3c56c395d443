// A resource's busy share while it carried measured traffic (workload.traffic.warmup): from the
// first measured work reaching it to the end of the last measured work it did, everything it
// did in between counted (warm-up work still queued as the window opens included). Its stats:
// measured_busy_ps, measured_window_ps, and the utilisation, busy over window (and over the
// resources busy at once: a VRAM's channels). Ports, links and VRAM share it.
#pragma once

#include <string>

#include "sim/core/stats.hpp"

namespace podsim {

class MeasuredBusy {
 public:
  MeasuredBusy(StatGroup& g, std::string busy_desc, std::string window_desc,
               std::string utilisation_name, std::string utilisation_desc, double resources = 1)
      : busy_(g, "measured_busy_ps", "ps", std::move(busy_desc)),
        window_(g, "measured_window_ps", "ps", std::move(window_desc)),
        utilisation_(g, std::move(utilisation_name), "ratio", std::move(utilisation_desc),
                     [this, resources] {
                       const double w = static_cast<double>(window_.value()) * resources;
                       return w > 0 ? static_cast<double>(busy_.value()) / w : 0.0;
                     }) {}
  MeasuredBusy(const MeasuredBusy&) = delete;
  MeasuredBusy& operator=(const MeasuredBusy&) = delete;

  bool open() const { return open_; }
  // Measured work reached the resource at `now` (the first opens its window).
  void arrived(Time now) {
    if (open_) return;
    open_ = true;
    end_ = now;  // the window so far: from here to here
  }
  // The resource did `busy` of work (measured or not), done at `done`.
  void did(Time busy, Time done, bool measured) {
    if (!open_) return;
    pending_ += static_cast<std::uint64_t>(busy.as_ps());
    if (!measured) return;
    busy_.inc(pending_);
    pending_ = 0;
    if (done > end_) {
      window_.inc(static_cast<std::uint64_t>((done - end_).as_ps()));
      end_ = done;
    }
  }

 private:
  Counter busy_, window_;
  Formula utilisation_;
  bool open_ = false;
  std::uint64_t pending_ = 0;  // busy ps since the last measured work
  Time end_;                   // the end of the window so far
};

}  // namespace podsim
