// TimedValue (sim/core/timed_value.hpp): a value that changes at a few simulated times, and what
// it was for something that happened at a given time, changes at that very time coming after.
#include <catch2/catch.hpp>

#include "sim/core/timed_value.hpp"

using namespace podsim;

TEST_CASE("a timed value is what was last set, and before a time what was set strictly earlier",
          "[timed_value]") {
  TimedValue<bool> down{false};
  CHECK_FALSE(down.now());
  CHECK_FALSE(down.before(Time::ns(5)));  // nothing set yet: the initial value
  down.set(Time::ns(10), true);
  down.set(Time::ns(30), false);
  down.set(Time::ns(30), true);  // two changes at one time: the later one counts from then
  CHECK(down.now());
  CHECK_FALSE(down.before(Time::ns(10)));  // a change at that very time comes after
  CHECK(down.before(Time::ps(10001)));
  CHECK(down.before(Time::ns(30)));
  CHECK(down.before(Time::ps(30001)));
  TimedValue<Time> stalled;
  CHECK(stalled.now() == Time{});
  stalled.set(Time::ns(100), Time::ns(300));
  CHECK(stalled.before(Time::ns(100)) == Time{});
  CHECK(stalled.before(Time::ns(200)) == Time::ns(300));
}
