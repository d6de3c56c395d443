#include <catch2/catch.hpp>

#include <vector>

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

TEST_CASE("wire costs: each port's own framing and rate, whatever other ports share tables",
          "[framing]") {
  // Ports that cost the same share one table of costs; a port that differs in any of what
  // the costs are made of must get its own. Made in turns, each checked against the
  // formulas, over sizes in the table and beyond it.
  std::vector<PortConfig> ports(7);
  ports[1].lanes = 2;
  ports[2].lane_rate = Bandwidth::gbit_per_second(100);
  ports[3].tl_header = Bytes(32);
  ports[4].tl_granule = Bytes(48);  // not a power of two
  ports[5].dl_flit = Bytes(320);
  ports[6].ethernet_overhead = Bytes(0);
  PortConfig payload = ports[0];
  payload.dl_payload = Bytes(600);
  ports.push_back(payload);
  std::vector<WireCosts> costs;
  for (const PortConfig& p : ports) {
    costs.emplace_back(p);
    costs.emplace_back(ports[0]);  // the default's table, asked for again between the others
  }
  for (std::size_t i = 0; i < ports.size(); ++i) {
    const PortConfig& p = ports[i];
    const WireCosts& c = costs[2 * i];
    const WireCosts& again = costs[2 * i + 1];
    for (const std::uint64_t payload_bytes : {0u, 8u, 64u, 100u, 256u, 1000u}) {
      INFO("port " << i << ", payload " << payload_bytes);
      CHECK(c.tl_bytes(payload_bytes) == tl_bytes(payload_bytes, p));
      const std::uint64_t tl = tl_bytes(payload_bytes, p);
      CHECK(c.wire_time(tl) == wire_time(tl, p));
      CHECK(c.wire_bytes(tl) == wire_bytes(tl, p));
      CHECK(again.wire_time(tl_bytes(payload_bytes, ports[0])) ==
            wire_time(tl_bytes(payload_bytes, ports[0]), ports[0]));
    }
  }
}
