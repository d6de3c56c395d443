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

void LogHistogram::widen(std::size_t lo, std::size_t hi) {
  // A power of two (kSub buckets) at a time, aligned, so a histogram settles after a few.
  if (!counts_.empty()) {
    if (lo >= base_ && hi <= base_ + counts_.size()) return;
    lo = std::min(lo, base_);
    hi = std::max(hi, base_ + counts_.size());
  }
  lo &= ~(kSub - 1);
  hi = (hi + kSub - 1) & ~(kSub - 1);
  std::vector<std::uint64_t> wider(hi - lo, 0);
  if (!counts_.empty())
    std::copy(counts_.begin(), counts_.end(),
              wider.begin() + static_cast<std::ptrdiff_t>(base_ - lo));
  counts_ = std::move(wider);
  base_ = lo;
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.count_ == 0) return;
  widen(o.base_, o.base_ + o.counts_.size());
  for (std::size_t k = 0; k < o.counts_.size(); ++k)
    counts_[o.base_ + k - base_] += o.counts_[k];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

void LogHistogram::merge_state(std::size_t first, std::size_t buckets,
                               std::span<const std::uint64_t> packed, std::uint64_t count,
                               std::uint64_t min, std::uint64_t max, unsigned __int128 sum) {
  const auto fail = [](const std::string& what) {
    throw std::invalid_argument("LogHistogram: " + what);
  };
  if (first > buckets || packed.size() > buckets - first)
    fail("buckets " + std::to_string(first) + " to " + std::to_string(first + packed.size()) +
         " of " + std::to_string(buckets) + ": out of range");
  if (count == 0) {
    // Recording nothing leaves a histogram as it was built.
    const LogHistogram empty;
    if (buckets != 0 || min != empty.min_ || max != empty.max_ || sum != empty.sum_)
      fail("an empty histogram with buckets, a min, a max or a sum");
    return;
  }
  if (buckets > index_of(UINT64_MAX) + 1)
    fail(std::to_string(buckets) + " buckets, more than any value needs");
  if (min > max) fail("min " + std::to_string(min) + " above max " + std::to_string(max));
  const std::size_t lo = index_of(min), hi = index_of(max);
  const auto at = [&](std::size_t i) -> std::uint64_t {
    return i >= first && i - first < packed.size() ? packed[i - first] : 0;
  };
  if (hi >= buckets || at(lo) == 0 || at(hi) == 0)
    fail("no count in the bucket of min " + std::to_string(min) + " or of max " +
         std::to_string(max));
  std::uint64_t total = 0;
  for (std::size_t k = 0; k < packed.size(); ++k) {
    const std::size_t i = first + k;
    if (packed[k] != 0 && (i < lo || i > hi))
      fail("a count in bucket " + std::to_string(i) + ", outside [min, max]");
    total += packed[k];
  }
  if (total != count)
    fail("bucket counts adding up to " + std::to_string(total) + ", not the count " +
         std::to_string(count));
  using u128 = unsigned __int128;
  if (sum < static_cast<u128>(min) * count || sum > static_cast<u128>(max) * count)
    fail("a sum outside [count * min, count * max]");
  widen(lo, hi + 1);  // what holds counts: from min's bucket to max's
  for (std::size_t k = 0; k < packed.size(); ++k)
    if (packed[k] != 0) counts_[first + k - base_] += packed[k];
  count_ += count;
  sum_ += sum;
  min_ = std::min(min_, min);
  max_ = std::max(max_, max);
}

std::uint64_t LogHistogram::percentile(double q) const {
  std::uint64_t v = 0;
  percentiles(&q, &v, 1);
  return v;
}

void LogHistogram::percentiles(const double* q, std::uint64_t* out, std::size_t n) const {
  std::size_t i = 0;  // the bucket reached, from base_
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
    const std::uint64_t mid =
        bucket_lower(base_ + i) + (bucket_upper(base_ + i) - bucket_lower(base_ + i)) / 2;
    out[k] = std::clamp(mid, min(), max_);
  }
}

}  // namespace podsim
