#include "sim/core/time_series.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <string>

namespace podsim {

TimeSeries::TimeSeries(std::vector<std::string> channels, Time interval, std::size_t max_bins)
    : names_(std::move(channels)),
      base_interval_(interval),
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

namespace {
// The first word of a packed series ("tseries" in ASCII, then a format version).
constexpr std::uint64_t kSeriesTag = 0x7473'6572'6965'7301ull;
constexpr std::size_t kHeaderWords = 6;  // tag, channels, max_bins, base, interval, bins
}  // namespace

void TimeSeries::pack(std::vector<std::uint64_t>& out) const {
  out.reserve(out.size() + kHeaderWords + names_.size() * bins_);
  out.push_back(kSeriesTag);
  out.push_back(names_.size());
  out.push_back(max_bins_);
  out.push_back(static_cast<std::uint64_t>(base_interval_.as_ps()));
  out.push_back(static_cast<std::uint64_t>(interval_.as_ps()));
  out.push_back(bins_);
  for (const auto& v : values_)
    out.insert(out.end(), v.begin(), v.begin() + static_cast<std::ptrdiff_t>(bins_));
}

const std::uint64_t* TimeSeries::merge_packed(const std::uint64_t* in, const std::uint64_t* end) {
  const auto fail = [](const std::string& what) {
    throw std::runtime_error("TimeSeries::merge_packed: " + what);
  };
  const auto left = static_cast<std::size_t>(end - in);
  if (left < kHeaderWords)
    fail("the buffer ends inside the header (" + std::to_string(left) + " words)");
  if (in[0] != kSeriesTag) fail("not a packed series (first word " + std::to_string(in[0]) + ")");
  const std::uint64_t channels = in[1], max_bins = in[2], base = in[3], interval = in[4],
                      bins = in[5];
  if (channels != names_.size())
    fail("packed with " + std::to_string(channels) + " channels, this series has " +
         std::to_string(names_.size()));
  if (max_bins != max_bins_)
    fail("packed with max_bins " + std::to_string(max_bins) + ", this series has " +
         std::to_string(max_bins_));
  if (base != static_cast<std::uint64_t>(base_interval_.as_ps()))
    fail("packed with a base interval of " + std::to_string(base) + " ps, this series has " +
         std::to_string(base_interval_.as_ps()) + " ps");
  // A series' interval is its base interval doubled some number of times.
  if (interval % base != 0 || !std::has_single_bit(interval / base) ||
      interval > static_cast<std::uint64_t>(INT64_MAX))
    fail("an interval of " + std::to_string(interval) + " ps, not the base interval " +
         std::to_string(base) + " ps times a power of two");
  if (bins > max_bins) fail(std::to_string(bins) + " bins, more than max_bins");
  if (channels != 0 && (left - kHeaderWords) / channels < bins)
    fail("the buffer ends inside the values (" + std::to_string(channels) + " x " +
         std::to_string(bins) + " expected, " + std::to_string(left - kHeaderWords) + " left)");

  // Whichever is finer is merged up to the coarser interval: this series by coarsening (as
  // its own adds would have done), the packed one bin by bin as it is added.
  while (static_cast<std::uint64_t>(interval_.as_ps()) < interval)
    coarsen();
  const int shift = std::countr_zero(static_cast<std::uint64_t>(interval_.as_ps()) / interval);
  const std::uint64_t* p = in + kHeaderWords;
  if (bins > 0) {
    const std::size_t need = static_cast<std::size_t>((bins - 1) >> shift) + 1;
    if (need > bins_) grow(need);
    for (auto& v : values_) {
      for (std::size_t i = 0; i < bins; ++i)
        v[i >> shift] += p[i];
      p += bins;
    }
  }
  return p;
}

}  // namespace podsim
