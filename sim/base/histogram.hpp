// A log-linear histogram of non-negative integers (HDR-style): exact below 256, then 128
// buckets per power of two, so any recorded value is known to within 0.8%. The counts live in
// a Boost.Histogram histogram over a growing log-linear axis: recording is O(1), and the
// buckets grow only as far as the largest value seen (a per-port histogram of small queue
// depths stays small). Percentiles are nearest-rank over the buckets.
#pragma once

#include <cstdint>
#include <memory>

namespace podsim {

class LogHistogram {
 public:
  static constexpr unsigned kSubBits = 7;

  LogHistogram();
  ~LogHistogram();
  LogHistogram(const LogHistogram& o);
  LogHistogram& operator=(const LogHistogram& o);
  LogHistogram(LogHistogram&&) noexcept;
  LogHistogram& operator=(LogHistogram&&) noexcept;

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
  std::size_t bucket_count() const;
  static std::uint64_t bucket_lower(std::size_t i);
  static std::uint64_t bucket_upper(std::size_t i);
  std::uint64_t bucket_value(std::size_t i) const;

  static std::size_t index_of(std::uint64_t v);

 private:
  struct Impl;  // the Boost.Histogram histogram (kept out of this widely included header)
  std::unique_ptr<Impl> impl_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  long double sum_ = 0;
};

}  // namespace podsim
