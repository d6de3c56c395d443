#include "sim/core/time_series.hpp"

#include <algorithm>
#include <stdexcept>

namespace podsim {

TimeSeries::TimeSeries(std::vector<std::string> channels, Time interval, std::size_t max_bins)
    : names_(std::move(channels)),
      interval_(interval),
      max_bins_(max_bins),
      values_(names_.size()) {
  if (interval_.as_ps() <= 0 || max_bins_ < 2)
    throw std::invalid_argument("TimeSeries: the interval must be positive, max_bins >= 2");
}

void TimeSeries::grow(std::size_t bins) {
  // Grow geometrically so that a long run reallocates O(log n) times.
  std::size_t cap = values_.empty() ? bins : values_[0].size();
  if (bins > cap) {
    cap = std::max(bins, std::min(max_bins_, cap * 2 + 16));
    for (auto& v : values_)
      v.resize(cap, 0);
  }
  bins_ = bins;
}

void TimeSeries::coarsen() {
  for (auto& v : values_) {
    for (std::size_t i = 0; i < bins_; i += 2)
      v[i / 2] = v[i] + (i + 1 < bins_ ? v[i + 1] : 0);
    std::fill(v.begin() + static_cast<std::ptrdiff_t>((bins_ + 1) / 2), v.end(), 0);
  }
  bins_ = (bins_ + 1) / 2;
  interval_ = interval_ * 2;
  from_ = to_ = 0;  // the cached bin is gone
}

}  // namespace podsim
