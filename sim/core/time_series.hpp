// Quantities over simulated time, in fixed bins (bytes completed per bin, per channel): what
// "bandwidth over time" is drawn from. The bins start at `interval`; when a run outlasts
// `max_bins` of them, neighbours merge and the interval doubles, so memory stays bounded
// whatever the run's length. Adding is O(1) and allocates only when the series grows.
#pragma once

#include <cstdint>
#include <span>
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
  Time base_interval() const { return base_interval_; }  // the interval it was built with
  std::size_t max_bins() const { return max_bins_; }
  std::size_t bins() const { return bins_; }
  const std::vector<std::string>& channels() const { return names_; }
  std::uint64_t value(std::size_t channel, std::size_t bin) const { return values_[channel][bin]; }
  // A channel's bins() values.
  std::span<const std::uint64_t> values(std::size_t channel) const {
    return std::span<const std::uint64_t>(values_[channel]).first(bins_);
  }

  // Appends the series' state (its shape, interval and values) to `out`, for another process
  // to merge (the reduction of a run split across MPI ranks).
  void pack(std::vector<std::uint64_t>& out) const;
  // Adds a series packed by pack() into this one: afterwards this holds exactly what one
  // series would hold had it received the adds of both. The coarser interval of the two wins
  // (the finer side's bins are merged up to it). Returns the position after what it read.
  // Throws std::runtime_error, changing nothing, if the buffer is short or malformed or the
  // two series differ in channel count, base interval or max_bins.
  const std::uint64_t* merge_packed(const std::uint64_t* in, const std::uint64_t* end);

 private:
  void grow(std::size_t bins);
  void coarsen();
  std::vector<std::string> names_;
  Time base_interval_;
  Time interval_;
  std::size_t max_bins_;
  std::size_t bins_ = 0;
  std::vector<std::vector<std::uint64_t>> values_;
  // The bin of the last add, [from_, to_) in ps (empty after a coarsening).
  std::size_t last_bin_ = 0;
  std::int64_t from_ = 0, to_ = 0;
};

}  // namespace podsim
