// Bandwidth over time: fixed bins, merged in pairs when a run outlasts them.
#include <catch2/catch.hpp>

#include "sim/core/time_series.hpp"

using namespace podsim;

TEST_CASE("amounts land in their time bins, per channel", "[timeseries]") {
  TimeSeries s({"remote", "local"}, Time::ns(10), 8);
  s.add(0, Time::ns(0), 64);
  s.add(0, Time::ns(9), 64);
  s.add(1, Time::ns(10), 5);
  s.add(0, Time::ns(35), 1);
  CHECK(s.bins() == 4);
  CHECK(s.value(0, 0) == 128);
  CHECK(s.value(1, 1) == 5);
  CHECK(s.value(0, 1) == 0);
  CHECK(s.value(0, 3) == 1);
}

TEST_CASE("a run longer than max_bins doubles the interval, keeping every amount", "[timeseries]") {
  TimeSeries s({"x"}, Time::ns(1), 4);
  for (int t = 0; t < 20; ++t)
    s.add(0, Time::ns(t), 1);
  CHECK(s.interval() == Time::ns(8));  // 1 -> 2 -> 4 -> 8 ns: 20 ns fits in 3 bins
  CHECK(s.bins() == 3);
  CHECK(s.value(0, 0) == 8);
  CHECK(s.value(0, 1) == 8);
  CHECK(s.value(0, 2) == 4);
  CHECK_THROWS(TimeSeries({"x"}, Time{}, 4));
}
