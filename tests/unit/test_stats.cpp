#include <catch2/catch.hpp>

#include "sim/core/stats.hpp"

using namespace podsim;

TEST_CASE("stats register with their group, with unit and meaning", "[stats]") {
  StatGroup g("vram");
  Counter reads(g, "reads", "count", "read requests served");
  Distribution lat(g, "latency", "ns", "latency", kPsPerNs);
  StatGroup child("port0");
  Counter pkts(child, "packets", "count", "packets");
  g.add_child(child);
  reads.inc(3);
  pkts.inc();
  lat.record(Time::ns(150));

  std::vector<std::string> paths;
  g.for_each("pod.gpu0.vram", [&](const std::string& p, const Stat& s) {
    paths.push_back(p);
    CHECK(!s.unit().empty());
    CHECK(!s.desc().empty());
  });
  CHECK(paths == std::vector<std::string>{"pod.gpu0.vram.reads", "pod.gpu0.vram.latency",
                                          "pod.gpu0.vram.port0.packets"});
  CHECK(reads.value() == 3);
  CHECK(lat.reported(lat.histogram().mean()) == Approx(150.0));
}

TEST_CASE("a breakdown's part means add up to the mean of the whole", "[stats]") {
  StatGroup g;
  Breakdown b(g, "hops", "ns", "per hop", {"a", "b", "c"}, kPsPerNs);
  b.add(0, 1000);
  b.add(1, 3000);
  b.add_sample();
  b.add(0, 3000);
  b.add(2, 1000);
  b.add_sample();
  CHECK(b.part_mean(0) == Approx(2.0));
  CHECK(b.part_mean(1) == Approx(1.5));
  CHECK(b.part_mean(2) == Approx(0.5));
  Breakdown other(g, "hops2", "ns", "per hop", {"a", "b", "c"}, kPsPerNs);
  other.add(1, 2000);
  other.add_sample();
  b.merge(other);
  CHECK(b.samples() == 3);
  CHECK(b.part_mean(1) == Approx(5.0 / 3));
  Breakdown wrong(g, "x", "ns", "x", {"a"});
  CHECK_THROWS(b.merge(wrong));
}

TEST_CASE("formulas are evaluated when read", "[stats]") {
  StatGroup g;
  double x = 1;
  Formula f(g, "f", "ratio", "twice x", [&] { return 2 * x; });
  x = 4;
  CHECK(f.value() == 8);
}

TEST_CASE("a group refuses a second stat of a name it has (stats.json keys stats by path)",
          "[stats]") {
  StatGroup g("vram");
  Counter reads(g, "reads", "count", "read requests served");
  CHECK_THROWS_AS(Counter(g, "reads", "count", "read requests served"), std::logic_error);
  CHECK_THROWS_AS(Distribution(g, "reads", "ns", "a latency", kPsPerNs), std::logic_error);
  Counter writes(g, "writes", "count", "write requests served");
  CHECK(g.stats().size() == 2);
}
