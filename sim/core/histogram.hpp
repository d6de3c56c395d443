// A log-linear histogram of non-negative integers (HDR-style): exact below 256, then 128
// buckets per power of two, so any recorded value is known to within 0.8%. The counts are a
// dense array that grows only as far as the largest value seen (a histogram of small queue
// depths stays small); recording is an index computation and an increment, with no pointer to
// chase but the array's. Percentiles are nearest-rank over the buckets; the sum is exact.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace podsim {

class LogHistogram {
 public:
  static constexpr unsigned kSubBits = 7;

  void record(std::uint64_t v, std::uint64_t times = 1) {
    if (times == 0) return;
    const std::size_t i = index_of(v);
    if (i >= counts_.size()) grow(i);
    counts_[i] += times;
    count_ += times;
    sum_ += static_cast<unsigned __int128>(v) * times;
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
  }
  void merge(const LogHistogram& other);

  std::uint64_t count() const { return count_; }
  std::uint64_t min() const { return count_ ? min_ : 0; }
  std::uint64_t max() const { return max_; }
  long double sum() const { return static_cast<long double>(sum_); }
  double mean() const {
    return count_ ? static_cast<double>(static_cast<long double>(sum_) / count_) : 0.0;
  }
  // Nearest-rank percentile (q in [0,1]); the bucket's midpoint, clamped to [min, max], so
  // a histogram holding one distinct value returns it exactly.
  std::uint64_t percentile(double q) const;
  // percentile(q[i]) into out[i] for n ascending q, in one pass over the buckets.
  void percentiles(const double* q, std::uint64_t* out, std::size_t n) const;

  // Buckets, for writers: the value range [lower, upper] of bucket i and its count.
  std::size_t bucket_count() const { return counts_.size(); }
  static std::uint64_t bucket_lower(std::size_t i);
  static std::uint64_t bucket_upper(std::size_t i);
  std::uint64_t bucket_value(std::size_t i) const { return counts_[i]; }

  // The whole state, to move a histogram between processes (sim/core/stat_pack.hpp): the
  // counts per bucket, and min and sum as stored (min is UINT64_MAX while count() is 0).
  std::span<const std::uint64_t> counts() const { return counts_; }
  std::uint64_t stored_min() const { return min_; }
  unsigned __int128 stored_sum() const { return sum_; }
  // Adds a histogram given in the state the accessors above give: `buckets` buckets, of which
  // those from `first` on hold `packed` (the rest zero), and count, min, max and sum. Throws
  // std::invalid_argument, changing nothing, if no sequence of record() calls could reach that
  // state (the counts do not add up to `count`, a count outside [min, max]'s buckets, too many
  // buckets...), saying what is wrong.
  void merge_state(std::size_t first, std::size_t buckets, std::span<const std::uint64_t> packed,
                   std::uint64_t count, std::uint64_t min, std::uint64_t max,
                   unsigned __int128 sum);

  static std::size_t index_of(std::uint64_t v) {
    if (v < (2u << kSubBits)) return static_cast<std::size_t>(v);
    const unsigned e = 63u - static_cast<unsigned>(__builtin_clzll(v));
    const unsigned shift = e - kSubBits;
    return static_cast<std::size_t>((static_cast<std::uint64_t>(shift) << kSubBits) + (v >> shift));
  }

 private:
  void grow(std::size_t i);
  std::vector<std::uint64_t> counts_;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  unsigned __int128 sum_ = 0;
};

}  // namespace podsim
