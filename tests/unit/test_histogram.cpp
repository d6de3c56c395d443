#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/core/histogram.hpp"
#include "sim/core/rng.hpp"

using namespace podsim;

TEST_CASE("small values are recorded exactly", "[histogram]") {
  LogHistogram h;
  for (std::uint64_t v = 0; v < 256; ++v)
    h.record(v);
  CHECK(h.count() == 256);
  CHECK(h.min() == 0);
  CHECK(h.max() == 255);
  CHECK(h.percentile(0.5) == 127);
  CHECK(h.percentile(1.0) == 255);
  CHECK(h.mean() == Approx(127.5));
}

TEST_CASE("a single value comes back exactly from every percentile", "[histogram]") {
  LogHistogram h;
  h.record(948'013, 5);
  CHECK(h.percentile(0.0) == 948'013);
  CHECK(h.percentile(0.5) == 948'013);
  CHECK(h.percentile(0.99) == 948'013);
  CHECK(h.mean() == Approx(948'013.0));
}

TEST_CASE("buckets tile the integers and bound the relative error", "[histogram]") {
  LogHistogram h;
  std::uint64_t prev_upper = 0;
  for (std::uint64_t v : {255ull, 256ull, 257ull, 1000ull, 65'535ull, 1'000'000ull, 1ull << 40}) {
    std::size_t i = LogHistogram::index_of(v);
    h.record(v);
    CHECK(h.bucket_lower(i) <= v);
    CHECK(v <= h.bucket_upper(i));
    const double width = static_cast<double>(h.bucket_upper(i) - h.bucket_lower(i) + 1);
    CHECK(width / static_cast<double>(v) <= 1.0 / 128);
    (void)prev_upper;
  }
  // Consecutive buckets are adjacent.
  for (std::size_t i = 1; i < 4000; ++i)
    CHECK(h.bucket_lower(i) == h.bucket_upper(i - 1) + 1);
}

TEST_CASE("percentiles of a uniform sample are within the bucket precision", "[histogram]") {
  LogHistogram h;
  Rng rng(7);
  for (int i = 0; i < 100'000; ++i)
    h.record(1'000'000 + rng.below(1'000'000));
  CHECK(static_cast<double>(h.percentile(0.5)) == Approx(1'500'000).epsilon(0.01));
  CHECK(static_cast<double>(h.percentile(0.99)) == Approx(1'990'000).epsilon(0.01));
}

TEST_CASE("merging equals recording everything in one", "[histogram]") {
  LogHistogram a, b, all;
  for (std::uint64_t v = 0; v < 5000; v += 7)
    (v % 2 ? a : b).record(v * 13), all.record(v * 13);
  a.merge(b);
  CHECK(a.count() == all.count());
  CHECK(a.min() == all.min());
  CHECK(a.max() == all.max());
  CHECK(a.percentile(0.9) == all.percentile(0.9));
  CHECK(a.mean() == Approx(all.mean()));
}

namespace {
// The nearest-rank percentile as LogHistogram computed it before percentiles() (a scan from
// the first bucket for each q): the reference the one-pass version must match.
std::uint64_t percentile_by_scan(const LogHistogram& h, double q) {
  if (h.count() == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(h.count())));
  rank = std::clamp<std::uint64_t>(rank, 1, h.count());
  std::uint64_t seen = 0;
  for (std::size_t i = 0; i < h.bucket_count(); ++i) {
    seen += h.bucket_value(i);
    if (seen >= rank) {
      const std::uint64_t mid = LogHistogram::bucket_lower(i) +
                                (LogHistogram::bucket_upper(i) - LogHistogram::bucket_lower(i)) / 2;
      return std::clamp(mid, h.min(), h.max());
    }
  }
  return h.max();
}
}  // namespace

TEST_CASE("percentiles, in one pass or one at a time, are the nearest-rank scan's", "[histogram]") {
  Rng rng(11);
  for (int trial = 0; trial < 50; ++trial) {
    LogHistogram h;
    const int n = trial == 0 ? 0 : 1 + static_cast<int>(rng.below(2000));
    for (int i = 0; i < n; ++i)
      h.record(rng.below(trial % 2 ? 300 : 5'000'000), 1 + rng.below(3));
    const double q[] = {0.0, 0.001, 0.5, 0.5, 0.9, 0.99, 0.999, 1.0};
    std::uint64_t all[8];
    h.percentiles(q, all, 8);
    for (int k = 0; k < 8; ++k) {
      INFO("trial " << trial << " q " << q[k]);
      CHECK(all[k] == percentile_by_scan(h, q[k]));
      CHECK(h.percentile(q[k]) == percentile_by_scan(h, q[k]));
    }
  }
  LogHistogram h;
  h.record(5);
  const double down[] = {0.9, 0.5};
  std::uint64_t out[2];
  CHECK_THROWS_AS(h.percentiles(down, out, 2), std::invalid_argument);
}

namespace {
// What a histogram holds, compared whole.
struct Held {
  std::vector<std::pair<std::size_t, std::uint64_t>> counts;  // the buckets that hold any
  std::uint64_t count, min, max;
  unsigned __int128 sum;
  bool operator==(const Held&) const = default;
};
Held held(const LogHistogram& h) {
  std::vector<std::pair<std::size_t, std::uint64_t>> c;
  for (std::size_t i = 0; i < h.bucket_count(); ++i)
    if (h.bucket_value(i)) c.emplace_back(i, h.bucket_value(i));
  return {c, h.count(), h.stored_min(), h.max(), h.stored_sum()};
}
}  // namespace

TEST_CASE("a histogram merged from its state holds what merging it whole gives", "[histogram]") {
  Rng rng(7);
  LogHistogram a, b;
  for (int i = 0; i < 500; ++i)
    a.record(rng.below(4'000'000));
  for (int i = 0; i < 300; ++i)
    b.record(1'000 + rng.below(80'000'000));  // above a's range and beyond it
  const auto c = b.counts();
  std::size_t first = 0, last = c.size();
  while (c[first] == 0)
    ++first;
  while (c[last - 1] == 0)
    --last;
  const std::span<const std::uint64_t> packed = c.subspan(first, last - first);
  first += b.first_bucket();
  const std::size_t buckets = b.bucket_count();

  LogHistogram whole = a, from_state = a;
  whole.merge(b);
  from_state.merge_state(first, buckets, packed, b.count(), b.stored_min(), b.max(),
                         b.stored_sum());
  CHECK(held(from_state) == held(whole));
  CHECK(from_state.percentile(0.99) == whole.percentile(0.99));

  // Into an empty histogram; and an empty state changes nothing.
  LogHistogram fresh;
  fresh.merge_state(first, buckets, packed, b.count(), b.stored_min(), b.max(), b.stored_sum());
  CHECK(held(fresh) == held(b));
  const LogHistogram empty;
  fresh.merge_state(0, 0, {}, 0, empty.stored_min(), empty.max(), empty.stored_sum());
  CHECK(held(fresh) == held(b));

  // A state no recording reaches throws and changes nothing.
  LogHistogram target = a;
  CHECK_THROWS_AS(target.merge_state(first, buckets, packed, b.count() + 1, b.stored_min(), b.max(),
                                     b.stored_sum()),
                  std::invalid_argument);
  CHECK_THROWS_AS(target.merge_state(first, first + packed.size() - 1, packed, b.count(),
                                     b.stored_min(), b.max(), b.stored_sum()),
                  std::invalid_argument);
  CHECK_THROWS_AS(target.merge_state(0, 0, {}, 0, 5, 0, 0), std::invalid_argument);
  CHECK(held(target) == held(a));
}

TEST_CASE("a histogram holds only the buckets from its lowest value to its highest",
          "[histogram]") {
  // Latencies of 0.7-1.9 us in ps: about 1,900 buckets from zero, two powers of two held.
  LogHistogram h;
  Rng rng(11);
  std::vector<std::uint64_t> values;
  for (int i = 0; i < 2000; ++i)
    values.push_back(1'200'000 + rng.below(700'000));
  values.push_back(700'000);  // below the buckets held so far: they widen downwards
  for (std::uint64_t v : values)
    h.record(v);
  CHECK(h.first_bucket() >= LogHistogram::index_of(700'000) - 128);
  CHECK(h.counts().size() <= 3 * 128);
  CHECK(h.bucket_count() == h.first_bucket() + h.counts().size());
  CHECK(h.bucket_value(0) == 0);
  CHECK(h.bucket_value(h.bucket_count() + 5) == 0);
  // Every value is in its bucket, and nothing else is anywhere.
  std::map<std::size_t, std::uint64_t> want;
  for (std::uint64_t v : values)
    ++want[LogHistogram::index_of(v)];
  std::map<std::size_t, std::uint64_t> got;
  for (std::size_t i = 0; i < h.bucket_count(); ++i)
    if (h.bucket_value(i)) got[i] = h.bucket_value(i);
  CHECK(got == want);
  CHECK(h.min() == 700'000);
  for (double q : {0.0, 0.5, 0.99, 1.0})
    CHECK(h.percentile(q) == percentile_by_scan(h, q));
}
