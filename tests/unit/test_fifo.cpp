#include <catch2/catch.hpp>

#include <deque>
#include <string>

#include "sim/core/fifo.hpp"

using namespace podsim;

TEST_CASE("a fifo keeps its order as it grows, wraps and empties", "[fifo]") {
  Fifo<std::string> q;
  std::deque<std::string> ref;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i <= round % 11; ++i) {
      const std::string s = std::to_string(round) + "." + std::to_string(i);
      if (i % 2 == 0) {
        q.push_back(s);  // a copy
      } else {
        std::string moved = s;
        q.push_back(std::move(moved));
      }
      ref.push_back(s);
    }
    for (int i = 0; i < round % 7 && !ref.empty(); ++i) {
      REQUIRE(q.front() == ref.front());
      q.pop_front();
      ref.pop_front();
    }
    REQUIRE(q.size() == ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
      REQUIRE(q[i] == ref[i]);
  }
}

TEST_CASE("a fifo takes one of its own entries, even as that push makes it grow", "[fifo]") {
  Fifo<std::string> q;
  q.push_back("first, long enough not to fit a short string's own bytes");
  for (int i = 1; i < 8; ++i)
    q.push_back(std::to_string(i));
  REQUIRE(q.size() == 8);  // full: the next push grows it, moving every entry
  q.push_back(q.front());
  REQUIRE(q.size() == 9);
  CHECK(q[8] == "first, long enough not to fit a short string's own bytes");
  CHECK(q.front() == q[8]);
  q.insert_sorted(q[3], [](const std::string&, const std::string&) { return false; });
  CHECK(q[9] == "3");
}
