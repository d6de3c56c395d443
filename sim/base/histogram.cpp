#include "sim/base/histogram.hpp"

#include <algorithm>
#include <bit>
#include <boost/histogram.hpp>
#include <cmath>

namespace podsim {

namespace bh = boost::histogram;

namespace {
constexpr std::uint64_t kSub = 1ull << LogHistogram::kSubBits;

// A Boost.Histogram axis: LogHistogram's buckets, growing upward as larger values arrive.
class LogLinearAxis {
 public:
  using value_type = std::uint64_t;
  bh::axis::index_type index(value_type v) const {
    const auto i = static_cast<bh::axis::index_type>(LogHistogram::index_of(v));
    return std::min(i, size_);
  }
  std::pair<bh::axis::index_type, bh::axis::index_type> update(value_type v) {
    const auto i = static_cast<bh::axis::index_type>(LogHistogram::index_of(v));
    if (i < size_) return {i, 0};
    const auto added = i + 1 - size_;
    size_ = i + 1;
    return {i, -added};
  }
  bh::axis::index_type size() const { return size_; }
  // A bucket's lower edge (Boost.Histogram's bin interface).
  double value(double i) const {
    return static_cast<double>(LogHistogram::bucket_lower(static_cast<std::size_t>(i)));
  }
  static constexpr unsigned options() { return bh::axis::option::growth_t::value; }
  bool operator==(const LogLinearAxis& o) const { return size_ == o.size_; }
  bool operator!=(const LogLinearAxis& o) const { return !(*this == o); }

 private:
  bh::axis::index_type size_ = 0;
};

using Hist = bh::histogram<std::tuple<LogLinearAxis>, bh::dense_storage<std::uint64_t>>;
}  // namespace

struct LogHistogram::Impl {
  Hist h{std::make_tuple(LogLinearAxis{})};
};

LogHistogram::LogHistogram() : impl_(std::make_unique<Impl>()) {}
LogHistogram::~LogHistogram() = default;
LogHistogram::LogHistogram(const LogHistogram& o)
    : impl_(std::make_unique<Impl>(*o.impl_)),
      count_(o.count_),
      min_(o.min_),
      max_(o.max_),
      sum_(o.sum_) {}
LogHistogram& LogHistogram::operator=(const LogHistogram& o) {
  if (this != &o) *this = LogHistogram(o);
  return *this;
}
LogHistogram::LogHistogram(LogHistogram&&) noexcept = default;
LogHistogram& LogHistogram::operator=(LogHistogram&&) noexcept = default;

std::size_t LogHistogram::index_of(std::uint64_t v) {
  if (v < 2 * kSub) return static_cast<std::size_t>(v);
  unsigned e = 63u - static_cast<unsigned>(std::countl_zero(v));
  unsigned shift = e - kSubBits;
  return static_cast<std::size_t>(shift * kSub + (v >> shift));
}

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

std::size_t LogHistogram::bucket_count() const {
  return static_cast<std::size_t>(impl_->h.axis().size());
}

std::uint64_t LogHistogram::bucket_value(std::size_t i) const {
  return impl_->h.at(static_cast<bh::axis::index_type>(i));
}

void LogHistogram::record(std::uint64_t v, std::uint64_t times) {
  if (times == 0) return;
  // The common case, a bucket that exists, straight into its cell; otherwise the axis grows.
  const auto i = static_cast<bh::axis::index_type>(index_of(v));
  if (i < impl_->h.axis().size())
    impl_->h.at(i) += times;
  else
    impl_->h(bh::weight(times), v);
  count_ += times;
  sum_ += static_cast<long double>(v) * times;
  min_ = std::min(min_, v);
  max_ = std::max(max_, v);
}

void LogHistogram::merge(const LogHistogram& o) {
  if (o.count_ == 0) return;
  // Bucket by bucket (the two axes may have grown to different sizes).
  for (auto&& b : bh::indexed(o.impl_->h))
    if (*b) impl_->h(bh::weight(static_cast<std::uint64_t>(*b)), bucket_lower(b.index()));
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
  for (auto&& b : bh::indexed(impl_->h)) {
    seen += *b;
    if (seen >= rank) {
      const auto i = static_cast<std::size_t>(b.index());
      std::uint64_t mid = bucket_lower(i) + (bucket_upper(i) - bucket_lower(i)) / 2;
      return std::clamp(mid, min(), max_);
    }
  }
  return max_;
}

}  // namespace podsim
