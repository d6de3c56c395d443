// A log-linear histogram of non-negative integers (HDR-style): exact below 256, then 128
// buckets per power of two, so any recorded value is known to within 0.8%. The counts are a
// dense array over the buckets from the lowest value seen to the highest, in whole powers of
// two (a latency histogram of 0.7-1.9 us in ps holds about 256 buckets, not the 1,900 from
// zero); recording is an index computation and an increment, with no pointer to chase but
// the array's. Percentiles are nearest-rank over the buckets; the sum is exact.
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
    if (i - base_ >= counts_.size()) widen(i, i + 1);  // below base_ wraps around: also widens
    counts_[i - base_] += times;
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

  // Buckets, for writers: those held are first_bucket() to bucket_count() - 1 (every other
  // bucket holds nothing); the value range [lower, upper] of bucket i and its count.
  std::size_t first_bucket() const { return base_; }
  std::size_t bucket_count() const { return base_ + counts_.size(); }
  static std::uint64_t bucket_lower(std::size_t i);
  static std::uint64_t bucket_upper(std::size_t i);
  std::uint64_t bucket_value(std::size_t i) const {
    return i - base_ < counts_.size() ? counts_[i - base_] : 0;
  }

  // The whole state, to move a histogram between processes (sim/core/stat_pack.hpp): the
  // counts of the buckets held (from first_bucket()), and min and sum as stored (min is
  // UINT64_MAX while count() is 0).
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
  // Holds buckets [lo, hi) too, and whole powers of two around them.
  void widen(std::size_t lo, std::size_t hi);
  // What record() writes first, in 64 bytes: the sum, count, min, max, base_ and the buckets'
  // begin and end (the vector's capacity, which it does not read, last): a Distribution
  // aligns it to a cache line, so that a sample touches that line and its bucket's.
  unsigned __int128 sum_ = 0;
  std::uint64_t count_ = 0;
  std::uint64_t min_ = UINT64_MAX;
  std::uint64_t max_ = 0;
  std::size_t base_ = 0;
  std::vector<std::uint64_t> counts_;  // buckets base_ onwards
};

}  // namespace podsim
