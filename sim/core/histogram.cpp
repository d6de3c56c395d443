#include "sim/core/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace podsim {

namespace {
constexpr std::uint64_t kSub = 1ull << LogHistogram::kSubBits;
}  // namespace

std::uint64_t LogHistogram::bucket_lower(std::size_t i) {
  if (i < 2 * kSub) return i;
  std::uint64_t shift = i / kSub - 1;
  std::uint64_t sub = i - shift * kSub;
  return sub << shift;
}

std::uint64_t LogHistogram::bucket_upper(std::size_t i) {
  if (i < 2 * kSub) return i;
  std::uint64_t shift = i / kSub - 1;
  return bucket_lower(i) + ((1ull << shift) - 1);
}

void LogHistogram::grow(std::size_t i) {
  // An octave (a power of two: kSub buckets) at a time; a latency histogram settles soon.
  std::size_t n = std::max<std::size_t>(counts_.size(), 2 * kSub);
  while (n <= i)
    n += kSub;
  counts_.resize(n, 0);
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.count_ == 0) return;
  if (counts_.size() < o.counts_.size()) counts_.resize(o.counts_.size(), 0);
  for (std::size_t i = 0; i < o.counts_.size(); ++i)
    counts_[i] += o.counts_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

LogHistogram LogHistogram::from_state(std::span<const std::uint64_t> counts, std::uint64_t count,
                                      std::uint64_t min, std::uint64_t max, unsigned __int128 sum) {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("LogHistogram: " + what);
  };
  LogHistogram h;
  if (count == 0) {
    // Recording nothing leaves the histogram as it was built.
    if (!counts.empty() || min != h.min_ || max != h.max_ || sum != h.sum_)
      fail("an empty histogram with buckets, a min, a max or a sum");
    return h;
  }
  if (counts.size() > index_of(UINT64_MAX) + 1)
    fail(std::to_string(counts.size()) + " buckets, more than any value needs");
  if (min > max) fail("min " + std::to_string(min) + " above max " + std::to_string(max));
  const std::size_t lo = index_of(min), hi = index_of(max);
  if (hi >= counts.size() || counts[lo] == 0 || counts[hi] == 0)
    fail("no count in the bucket of min " + std::to_string(min) + " or of max " +
         std::to_string(max));
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] != 0 && (i < lo || i > hi))
      fail("a count in bucket " + std::to_string(i) + ", outside [min, max]");
    total += counts[i];
  }
  if (total != count)
    fail("bucket counts adding up to " + std::to_string(total) + ", not the count " +
         std::to_string(count));
  using u128 = unsigned __int128;
  if (sum < static_cast<u128>(min) * count || sum > static_cast<u128>(max) * count)
    fail("a sum outside [count * min, count * max]");
  h.counts_.assign(counts.begin(), counts.end());
  h.count_ = count;
  h.min_ = min;
  h.max_ = max;
  h.sum_ = sum;
  return h;
}

std::uint64_t LogHistogram::percentile(double q) const {
  std::uint64_t v = 0;
  percentiles(&q, &v, 1);
  return v;
}

void LogHistogram::percentiles(const double* q, std::uint64_t* out, std::size_t n) const {
  std::size_t i = 0;  // the bucket reached
  std::uint64_t seen = count_ ? counts_[0] : 0;
  for (std::size_t k = 0; k < n; ++k) {
    if (k && q[k] < q[k - 1])
      throw std::invalid_argument("LogHistogram::percentiles: q not ascending");
    if (count_ == 0) {
      out[k] = 0;
      continue;
    }
    const double qk = std::clamp(q[k], 0.0, 1.0);
    auto rank = static_cast<std::uint64_t>(std::ceil(qk * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    while (seen < rank && i + 1 < counts_.size())
      seen += counts_[++i];
    if (seen < rank) {
      out[k] = max_;
      continue;
    }
    const std::uint64_t mid = bucket_lower(i) + (bucket_upper(i) - bucket_lower(i)) / 2;
    out[k] = std::clamp(mid, min(), max_);
  }
}

}  // namespace podsim
