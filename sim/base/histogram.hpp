// A log-linear histogram of non-negative integers (HDR-style): exact below 256, then 128
// buckets per power of two, so any recorded value is known to within 0.8%. Recording is
// O(1) and allocation-free once the range of values seen has been reached.
#pragma once

#include <cstdint>
#include <vector>

namespace podsim {

class LogHistogram {
 public:
  static constexpr unsigned kSubBits = 7;

  void record(std::uint64_t v, std::uint64_t times = 1);
  void merge(const LogHistogram& other);
  void clear();

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  long double sum() const { return sum_; }
  double mean() const { return count_ ? static_cast<double>(sum_ / count_) : 0.0; }
  // Nearest-rank percentile (q in [0,1]); the bucket's midpoint, clamped to [min, max], so
  // a histogram holding one distinct value returns it exactly.
  std::uint64_t percentile(double q) const;

  // Buckets, for writers: the value range [lower, upper] of bucket i and its count.
  std::size_t bucket_count() const { return buckets_.size(); }
  std::uint64_t bucket_lower(std::size_t i) const;
  std::uint64_t bucket_upper(std::size_t i) const;
  std::uint64_t bucket_value(std::size_t i) const { return buckets_[i]; }

  static std::size_t index_of(std::uint64_t v);

 private:
  std::vector<std::uint64_t> buckets_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace podsim
