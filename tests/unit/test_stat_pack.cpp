// Stats packed into words and merged into others (the reduction of a run split across MPI
// ranks): merging B's packed stats into stats that recorded A must give, field by field, what
// stats that recorded both A and B hold. And every mismatch is an error that names the stat.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/core/rng.hpp"
#include "sim/core/stat_pack.hpp"
#include "sim/core/stats.hpp"
#include "sim/core/time_series.hpp"

using namespace podsim;
using Catch::Contains;

namespace {

// One of each kind of stat, with the same names in every set.
struct Stats {
  StatGroup g{"gpu"};
  Counter reads{g, "reads", "count", "reads served"};
  Series bytes{g, "bytes", "B", "bytes per port", 4};
  Formula twice{g, "twice", "count", "reads, doubled", [this] { return 2.0 * reads.value(); }};
  Distribution latency{g, "latency", "ns", "access latency", kPsPerNs};
  Breakdown hops{g, "hops", "ns", "time per hop", {"tx", "wire", "rx"}, kPsPerNs};
};

// What one rank records: n accesses, latencies in [min_latency, max_latency] (none if
// !latencies).
struct Recording {
  std::uint64_t seed = 1;
  int n = 0;
  std::uint64_t min_latency = 0, max_latency = 0;
  bool latencies = true;
};

void record(Stats& s, const Recording& r) {
  Rng rng(r.seed);
  for (int i = 0; i < r.n; ++i) {
    s.reads.inc(1 + rng.below(3));
    s.bytes.add(rng.below(4), 64 * (1 + rng.below(4)));
    if (r.latencies) s.latency.record(r.min_latency + rng.below(r.max_latency - r.min_latency + 1));
    for (std::size_t p = 0; p < 3; ++p)
      s.hops.add(p, rng.below(r.max_latency + 1));
    s.hops.add_sample();
  }
}

std::vector<std::uint64_t> pack_all(const Stats& s) {
  std::vector<std::uint64_t> out;
  for (const Stat* st : s.g.stats())
    pack_stat(*st, out);
  return out;
}

void merge_all(Stats& into, const std::vector<std::uint64_t>& packed) {
  const std::uint64_t* p = packed.data();
  const std::uint64_t* end = p + packed.size();
  for (const Stat* st : into.g.stats())
    p = merge_packed(*st, p, end);
  CHECK(p == end);  // every stat read exactly its own words
}

void check_same(const LogHistogram& x, const LogHistogram& y) {
  CHECK(x.count() == y.count());
  CHECK(x.min() == y.min());
  CHECK(x.max() == y.max());
  CHECK(x.stored_min() == y.stored_min());
  CHECK(static_cast<std::uint64_t>(x.stored_sum()) == static_cast<std::uint64_t>(y.stored_sum()));
  CHECK(static_cast<std::uint64_t>(x.stored_sum() >> 64) ==
        static_cast<std::uint64_t>(y.stored_sum() >> 64));
  CHECK(x.sum() == y.sum());
  CHECK(x.mean() == y.mean());
  for (double q : {0.0, 0.01, 0.25, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    INFO("percentile " << q);
    CHECK(x.percentile(q) == y.percentile(q));
  }
  // Every bucket (those a histogram does not hold read as empty).
  for (std::size_t i = 0; i < std::max(x.bucket_count(), y.bucket_count()) + 1; ++i) {
    INFO("bucket " << i);
    CHECK(x.bucket_value(i) == y.bucket_value(i));
  }
}

void check_same(const Stats& x, const Stats& y) {
  CHECK(x.reads.value() == y.reads.value());
  CHECK(x.bytes.values() == y.bytes.values());
  CHECK(x.twice.value() == y.twice.value());
  check_same(x.latency.histogram(), y.latency.histogram());
  CHECK(x.hops.samples() == y.hops.samples());
  CHECK(std::ranges::equal(x.hops.sums(), y.hops.sums()));
  for (std::size_t p = 0; p < 3; ++p)
    CHECK(x.hops.part_mean(p) == y.hops.part_mean(p));
}

// Records a into x, b into y, both into all; merges y's packed stats into x.
void merge_and_compare(const Recording& a, const Recording& b) {
  Stats x, y, all;
  record(x, a);
  record(all, a);
  record(y, b);
  record(all, b);
  merge_all(x, pack_all(y));
  check_same(x, all);
}

}  // namespace

TEST_CASE("packed stats merged into others equal both recorded into one", "[stat_pack]") {
  // Small latencies keep A's histogram at 256 buckets; B's reach 1e9 ps (thousands).
  const Recording small{.seed = 3, .n = 500, .min_latency = 5, .max_latency = 200};
  const Recording large{.seed = 4, .n = 700, .min_latency = 100, .max_latency = 1'000'000'000};
  Stats s, l;
  record(s, small);
  record(l, large);
  REQUIRE(s.latency.histogram().bucket_count() < l.latency.histogram().bucket_count());

  SECTION("the merged-into histogram is the shorter") {
    merge_and_compare(small, large);
  }
  SECTION("the merged-into histogram is the longer") {
    merge_and_compare(large, small);
  }
  SECTION("both alike") {
    merge_and_compare(large, Recording{.seed = 9, .n = 300, .max_latency = 5'000'000});
  }
}

TEST_CASE("merging stats that recorded nothing changes nothing", "[stat_pack]") {
  const Recording a{.seed = 5, .n = 200, .min_latency = 1'000, .max_latency = 90'000};
  merge_and_compare(a, Recording{});

  // Nothing into nothing: still empty (an empty histogram's min reads 0).
  Stats x, y;
  merge_all(x, pack_all(y));
  CHECK(x.reads.value() == 0);
  CHECK(x.latency.histogram().count() == 0);
  CHECK(x.latency.histogram().min() == 0);
  CHECK(x.latency.histogram().max() == 0);
  CHECK(x.latency.histogram().bucket_count() == 0);
  CHECK(x.hops.samples() == 0);
  check_same(x, y);
}

TEST_CASE("stats that recorded nothing take the packed values whole", "[stat_pack]") {
  merge_and_compare(Recording{},
                    {.seed = 6, .n = 200, .min_latency = 1'000, .max_latency = 90'000});
}

TEST_CASE("a distribution with values on one side only keeps its min and max", "[stat_pack]") {
  // Every latency at least 1,000: a min taken from the empty side would read 0 or UINT64_MAX.
  const Recording with{.seed = 7, .n = 100, .min_latency = 1'000, .max_latency = 50'000};
  Recording without{.seed = 8, .n = 150, .min_latency = 1'000, .max_latency = 50'000};
  without.latencies = false;

  Stats only;
  record(only, with);
  REQUIRE(only.latency.histogram().min() >= 1'000);

  SECTION("values packed, none merged into") {
    Stats x, y;
    record(x, without);
    record(y, with);
    merge_all(x, pack_all(y));
    check_same(x.latency.histogram(), only.latency.histogram());
  }
  SECTION("none packed, values merged into") {
    Stats x, y;
    record(x, with);
    record(y, without);
    merge_all(x, pack_all(y));
    check_same(x.latency.histogram(), only.latency.histogram());
  }
  SECTION("and the other stats add up as usual") {
    merge_and_compare(without, with);
  }
}

TEST_CASE("a histogram's sum beyond 64 bits survives packing", "[stat_pack]") {
  Stats x, y, all;
  for (int i = 0; i < 3; ++i) {
    x.latency.record(std::uint64_t{1} << 63);
    all.latency.record(std::uint64_t{1} << 63);
  }
  for (std::uint64_t v : {UINT64_MAX, std::uint64_t{12'345}, UINT64_MAX - 1}) {
    y.latency.record(v);
    all.latency.record(v);
  }
  REQUIRE(static_cast<std::uint64_t>(y.latency.histogram().stored_sum() >> 64) != 0);
  merge_all(x, pack_all(y));
  check_same(x, all);
}

TEST_CASE("each stat mismatch is an error naming the stat and what differed", "[stat_pack]") {
  Stats x;
  record(x, {.seed = 2, .n = 50, .max_latency = 10'000});
  const std::vector<std::uint64_t> before = pack_all(x);
  StatGroup g{"other"};
  Counter counter{g, "reads", "count", "reads"};
  Series longer{g, "bytes", "B", "bytes per port", 5};
  Breakdown fewer{g, "hops", "ns", "time per hop", {"tx", "rx"}};
  std::vector<std::uint64_t> buf;
  const auto merge_into = [&](const Stat& s) {
    merge_packed(s, buf.data(), buf.data() + buf.size());
  };
  const auto stat = [&](std::size_t i) -> const Stat& { return *x.g.stats()[i]; };
  // x.g.stats(): reads, bytes, twice, latency, hops.

  SECTION("another kind") {
    pack_stat(*g.stats()[0], buf);  // a counter
    CHECK_THROWS_WITH(merge_into(stat(1)),
                      Contains("'bytes'") && Contains("packed as a counter, merged into a series"));
  }
  SECTION("a series of another length") {
    pack_stat(*g.stats()[1], buf);
    CHECK_THROWS_WITH(merge_into(stat(1)), Contains("'bytes'") && Contains("5 packed values") &&
                                               Contains("this series has 4"));
  }
  SECTION("a breakdown with another number of parts") {
    pack_stat(*g.stats()[2], buf);
    CHECK_THROWS_WITH(merge_into(stat(4)), Contains("'hops'") && Contains("2 parts packed") &&
                                               Contains("this breakdown has 3"));
  }
  SECTION("a counter or a formula of another length") {
    buf = {before[0], 2, 1, 1};  // reads: two values
    CHECK_THROWS_WITH(merge_into(stat(0)), Contains("'reads'") && Contains("2 packed values"));
    std::vector<std::uint64_t> f;
    pack_stat(stat(2), f);
    buf = {f[0], 1, 7};  // twice: a value
    CHECK_THROWS_WITH(merge_into(stat(2)), Contains("'twice'") && Contains("1 packed values"));
  }
  SECTION("a word that is no tag") {
    buf = before;
    buf[0] ^= 1ull << 40;
    CHECK_THROWS_WITH(merge_into(stat(0)), Contains("'reads'") && Contains("not a packed stat"));
  }
  SECTION("a distribution's state that recording could not reach") {
    pack_stat(stat(3), buf);
    REQUIRE(buf.size() > 7);
    SECTION("counts that do not add up") {
      ++buf[2];  // the count
      CHECK_THROWS_WITH(merge_into(stat(3)), Contains("'latency'") && Contains("not the count"));
    }
    SECTION("a count outside [min, max]") {
      // One more sample, in the bucket after the last that held any (above max's).
      buf.push_back(1);
      ++buf[1];  // the length
      ++buf[2];  // the count
      ++buf[8];  // the number of buckets
      CHECK_THROWS_WITH(merge_into(stat(3)),
                        Contains("'latency'") && Contains("outside [min, max]"));
    }
    SECTION("min above max") {
      std::swap(buf[3], buf[4]);
      CHECK_THROWS_WITH(merge_into(stat(3)), Contains("'latency'") && Contains("above max"));
    }
    SECTION("too short for its header") {
      buf = {buf[0], 4, 1, 1, 1, 1};
      CHECK_THROWS_WITH(merge_into(stat(3)), Contains("'latency'") && Contains("at least 7"));
    }
    SECTION("buckets beyond the number of buckets") {
      buf[8] = buf[7];  // no room for the counts packed after the first
      CHECK_THROWS_WITH(merge_into(stat(3)), Contains("'latency'") && Contains("out of range"));
    }
  }
  SECTION("running past the end, wherever the buffer is cut") {
    for (std::size_t i = 0; i < 5; ++i) {
      std::vector<std::uint64_t> one;
      pack_stat(stat(i), one);
      for (std::size_t cut = 0; cut < one.size(); ++cut) {
        INFO(stat(i).name() << " cut at " << cut << " of " << one.size());
        buf.assign(one.begin(), one.begin() + static_cast<std::ptrdiff_t>(cut));
        CHECK_THROWS_WITH(merge_into(stat(i)), Contains("'" + stat(i).name() + "'") &&
                                                   Contains("the buffer ends inside"));
      }
    }
  }
  // A failed merge changed nothing.
  CHECK(pack_all(x) == before);
}

// ---- time series ----------------------------------------------------------------------------

namespace {

TimeSeries make_series() {
  return TimeSeries({"remote", "local"}, Time::ns(10), 8);
}

// Amounts at n random times up to last_ns, in time order, into s and into all.
void add_until(TimeSeries& s, TimeSeries& all, std::uint64_t seed, int n, std::int64_t last_ns) {
  Rng rng(seed);
  std::vector<std::int64_t> times;
  for (int i = 0; i < n; ++i)
    times.push_back(static_cast<std::int64_t>(rng.below(static_cast<std::uint64_t>(last_ns))));
  if (n > 0) times.back() = last_ns;
  std::sort(times.begin(), times.end());
  for (std::int64_t t : times) {
    const std::size_t ch = rng.below(2);
    const std::uint64_t amount = 1 + rng.below(100);
    s.add(ch, Time::ns(t), amount);
    all.add(ch, Time::ns(t), amount);
  }
}

void check_same(const TimeSeries& x, const TimeSeries& y) {
  CHECK(x.interval() == y.interval());
  REQUIRE(x.bins() == y.bins());
  for (std::size_t c = 0; c < 2; ++c)
    CHECK(std::ranges::equal(x.values(c), y.values(c)));
}

}  // namespace

TEST_CASE("time series coarsened differently merge to what one series would hold",
          "[stat_pack][timeseries]") {
  // 8 bins of 10 ns: 75 ns stays at 10 ns, 300 ns coarsens to 40 ns, 2000 ns to 320 ns.
  struct Case {
    int na;
    std::int64_t last_a;
    int nb;
    std::int64_t last_b;
  };
  const Case c =
      GENERATE(Case{40, 75, 60, 300}, Case{60, 300, 40, 75}, Case{30, 2'000, 50, 300},
               Case{50, 300, 50, 310}, Case{0, 0, 50, 300}, Case{50, 300, 0, 0}, Case{0, 0, 0, 0});
  INFO("A: " << c.na << " adds up to " << c.last_a << " ns; B: " << c.nb << " up to " << c.last_b
             << " ns");
  TimeSeries a = make_series(), b = make_series(), all = make_series();
  add_until(a, all, 11, c.na, c.last_a);
  add_until(b, all, 12, c.nb, c.last_b);
  std::vector<std::uint64_t> packed{99};  // something before: pack appends
  b.pack(packed);
  const std::uint64_t* end = packed.data() + packed.size();
  CHECK(a.merge_packed(packed.data() + 1, end) == end);
  check_same(a, all);

  // The merged series goes on recording as the one series does.
  for (std::int64_t t : {c.last_a, c.last_b + 5, std::int64_t{4'000}}) {
    a.add(1, Time::ns(t), 3);
    all.add(1, Time::ns(t), 3);
  }
  check_same(a, all);
}

TEST_CASE("the intervals really differ in the time series merge cases", "[stat_pack][timeseries]") {
  // Guards the case list above: 75 ns, 300 ns and 2000 ns end at three different intervals.
  TimeSeries x = make_series(), y = make_series(), z = make_series(), all = make_series();
  add_until(x, all, 1, 10, 75);
  add_until(y, all, 1, 10, 300);
  add_until(z, all, 1, 10, 2'000);
  CHECK(x.interval() == Time::ns(10));
  CHECK(y.interval() == Time::ns(40));
  CHECK(z.interval() == Time::ns(320));
}

TEST_CASE("a time series mismatch is an error and changes nothing", "[stat_pack][timeseries]") {
  TimeSeries a = make_series(), all = make_series();
  add_until(a, all, 21, 30, 300);
  std::vector<std::uint64_t> buf;
  const auto merge = [&] { a.merge_packed(buf.data(), buf.data() + buf.size()); };

  SECTION("another channel count") {
    TimeSeries({"remote"}, Time::ns(10), 8).pack(buf);
    CHECK_THROWS_WITH(merge(), Contains("1 channels, this series has 2"));
  }
  SECTION("another max_bins") {
    TimeSeries({"remote", "local"}, Time::ns(10), 16).pack(buf);
    CHECK_THROWS_WITH(merge(), Contains("max_bins 16, this series has 8"));
  }
  SECTION("another base interval") {
    TimeSeries({"remote", "local"}, Time::ns(20), 8).pack(buf);
    CHECK_THROWS_WITH(merge(), Contains("base interval of 20000 ps"));
  }
  SECTION("an interval that is not the base doubled") {
    make_series().pack(buf);
    buf[4] = 30'000;
    CHECK_THROWS_WITH(merge(), Contains("times a power of two"));
  }
  SECTION("more bins than max_bins") {
    make_series().pack(buf);
    buf[5] = 9;
    buf.resize(buf.size() + 18);
    CHECK_THROWS_WITH(merge(), Contains("more than max_bins"));
  }
  SECTION("a word that is no tag") {
    make_series().pack(buf);
    buf[0] ^= 1;
    CHECK_THROWS_WITH(merge(), Contains("not a packed series"));
  }
  SECTION("running past the end, wherever the buffer is cut") {
    TimeSeries b = make_series(), ignored = make_series();
    add_until(b, ignored, 22, 30, 2'000);
    std::vector<std::uint64_t> whole;
    b.pack(whole);
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {
      INFO("cut at " << cut << " of " << whole.size());
      buf.assign(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
      CHECK_THROWS_WITH(merge(), Contains("the buffer ends inside"));
    }
  }
  check_same(a, all);  // not coarsened, nothing added
}
