#include "sim/base/histogram.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace podsim {

namespace {
constexpr std::uint64_t kSub = 1ull << LogHistogram::kSubBits;
}

std::size_t LogHistogram::index_of(std::uint64_t v) {
  if (v < 2 * kSub) return static_cast<std::size_t>(v);
  unsigned e = 63u - static_cast<unsigned>(std::countl_zero(v));
  unsigned shift = e - kSubBits;
  return static_cast<std::size_t>(shift * kSub + (v >> shift));
}

std::uint64_t LogHistogram::bucket_lower(std::size_t i) const {
  if (i < 2 * kSub) return i;
  std::uint64_t shift = i / kSub - 1;
  std::uint64_t sub = i - shift * kSub;
  return sub << shift;
}

std::uint64_t LogHistogram::bucket_upper(std::size_t i) const {
  if (i < 2 * kSub) return i;
  std::uint64_t shift = i / kSub - 1;
  return bucket_lower(i) + ((1ull << shift) - 1);
}

void LogHistogram::record(std::uint64_t v, std::uint64_t times) {
  if (times == 0) return;
  std::size_t i = index_of(v);
  if (i >= buckets_.size()) buckets_.resize(i + 1, 0);
  buckets_[i] += times;
  count_ += times;
  sum_ += static_cast<long double>(v) * times;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.count_ == 0) return;
  if (o.buckets_.size() > buckets_.size()) buckets_.resize(o.buckets_.size(), 0);
  for (std::size_t i = 0; i < o.buckets_.size(); ++i)
    buckets_[i] += o.buckets_[i];
  count_ += o.count_;
  sum_ += o.sum_;
  min_ = std::min(min_, o.min_);
  max_ = std::max(max_, o.max_);
}

void LogHistogram::clear() {
  *this = LogHistogram();
}

std::uint64_t LogHistogram::percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<std::uint64_t>(rank, 1, count_);
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < buckets_.size(); ++i) {
    seen += buckets_[i];
    if (seen >= rank) {
      std::uint64_t mid = bucket_lower(i) + (bucket_upper(i) - bucket_lower(i)) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

}  // namespace podsim
