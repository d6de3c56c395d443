#include <catch2/catch.hpp>

#include "fabric/framing.hpp"

using namespace podsim;

TEST_CASE("TL bytes: header plus data in whole granules", "[framing]") {
  PortConfig p;  // 16 B header, 16 B granules
  CHECK(tl_bytes(0, p) == 16);
  CHECK(tl_bytes(64, p) == 80);
  CHECK(tl_bytes(256, p) == 272);
  p.tl_granule = Bytes(64);  // whole 64 B TL flits
  CHECK(tl_bytes(0, p) == 64);
  CHECK(tl_bytes(64, p) == 128);
  CHECK(tl_bytes(256, p) == 320);
}

TEST_CASE("wire time: DL flits of 640 B carry 628 B, UALoE adds framing per flit", "[framing]") {
  PortConfig p;
  p.ethernet_overhead = Bytes(0);
  // 628 TL bytes fill exactly one 640 B flit: 6.4 ns at 800 Gb/s.
  CHECK(wire_time(628, p) == Time::ps(6'400));
  p.ethernet_overhead = Bytes(38);
  CHECK(wire_time(628, p) == Time::ps(6'780));
  // Rounded up to a whole picosecond.
  CHECK(wire_time(80, p) == Time::ps((80ull * 678 * 8 * 1000 + 628 * 800 - 1) / (628 * 800)));
}

TEST_CASE("payload efficiency and its parts", "[framing]") {
  PortConfig p;
  const double wire = 272.0 * 678.0 / 628.0;
  CHECK(payload_efficiency(256, p) == Approx(256.0 / wire));
  p.ethernet_overhead = Bytes(0);
  // Native UALink, 256 B stores: 256 / (272 x 640/628) = 92.4%, near the claimed 93%.
  CHECK(payload_efficiency(256, p) == Approx(0.9235).epsilon(0.001));
}

TEST_CASE("flit error probability from a bit error rate, the replay penalty", "[framing]") {
  PortConfig p;
  LinkConfig l;
  CHECK(flit_error_probability(l, p) == 0.0);
  l.flit_error_rate = 0.02;
  CHECK(flit_error_probability(l, p) == 0.02);
  l.flit_error_rate = 0;
  l.bit_error_rate = 1e-6;
  CHECK(flit_error_probability(l, p) == Approx(1 - std::pow(1 - 1e-6, 640 * 8)));
  CHECK(replay_penalty(l, p) ==
        wire_time(628, p) + l.flight_time() * 2 + p.tx_latency() + p.rx_latency() * 2);
}
