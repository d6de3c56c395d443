// Quantities over simulated time, in fixed bins (bytes completed per bin, per channel): what
// "bandwidth over time" is drawn from. The bins start at `interval`; when a run outlasts
// `max_bins` of them, neighbours merge and the interval doubles, so memory stays bounded
// whatever the run's length. Adding is O(1) and allocates only when the series grows.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/core/units.hpp"

namespace podsim {

class TimeSeries {
 public:
  TimeSeries(std::vector<std::string> channels, Time interval, std::size_t max_bins = 1 << 16);

  void add(std::size_t channel, Time at, std::uint64_t amount) {
    const std::int64_t ps = at.as_ps();
    if (ps < from_ || ps >= to_) {  // not the bin of the last add (completions come in order)
      std::size_t bin = static_cast<std::size_t>(ps / interval_.as_ps());
      while (bin >= max_bins_) {
        coarsen();
        bin = static_cast<std::size_t>(ps / interval_.as_ps());
      }
      if (bin >= bins_) grow(bin + 1);
      last_bin_ = bin;
      from_ = static_cast<std::int64_t>(bin) * interval_.as_ps();
      to_ = from_ + interval_.as_ps();
    }
    values_[channel][last_bin_] += amount;
  }

  Time interval() const { return interval_; }
  std::size_t bins() const { return bins_; }
  const std::vector<std::string>& channels() const { return names_; }
  std::uint64_t value(std::size_t channel, std::size_t bin) const { return values_[channel][bin]; }

 private:
  void grow(std::size_t bins);
  void coarsen();
  std::vector<std::string> names_;
  Time interval_;
  std::size_t max_bins_;
  std::size_t bins_ = 0;
  std::vector<std::vector<std::uint64_t>> values_;
  // The bin of the last add, [from_, to_) in ps (empty after a coarsening).
  std::size_t last_bin_ = 0;
  std::int64_t from_ = 0, to_ = 0;
};

}  // namespace podsim
