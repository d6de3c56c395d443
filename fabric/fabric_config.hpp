// Configuration of the UALoE fabric: the GPUs' UALink ports, the links and the switches.
#pragma once

#include <array>

#include "sim/base/params.hpp"
#include "sim/base/units.hpp"

namespace podsim {

struct PortConfig {
  std::uint32_t lanes = 4;
  Bandwidth lane_rate = Bandwidth::gbit_per_second(200);
  Time pipeline_latency = Time::ns(10);
  Time serdes_latency = Time::ns(8);
  Time fec_latency = Time::ns(20);
  Bytes header_bytes = Bytes(16);

  Bandwidth rate() const { return lane_rate * lanes; }
  // Transmit side: TL/DL pipeline then SerDes. Receive side: SerDes, FEC decode, pipeline.
  Time tx_latency() const { return pipeline_latency + serdes_latency; }
  Time rx_latency() const { return serdes_latency + fec_latency + pipeline_latency; }

  template <class V>
  void visit(V& v) {
    v.field("lanes", lanes, "lanes per port (x1, x2 or x4)", between<std::uint32_t>(1, 4));
    v.field("lane_rate", lane_rate, "data rate per lane (UALink 200G: 200 Gb/s)",
            at_least(Bandwidth::gbit_per_second(1)));
    v.field("pipeline_latency", pipeline_latency,
            "transaction- and data-link-layer processing, each side");
    v.field("serdes_latency", serdes_latency, "SerDes latency, each side");
    v.field("fec_latency", fec_latency, "FEC decode latency at the receiver");
    v.field("header_bytes", header_bytes,
            "bytes of header each packet carries on the wire besides its payload",
            between(Bytes(0), Bytes(256)));
  }
  template <class C>
  void check(C& c) const {
    if (lanes == 3) c.fail("lanes", "a port uses 1, 2 or 4 lanes");
  }
};

struct LinkConfig {
  Length cable_length = Length::m(2);
  Time delay_per_metre = Time::ps(5000);

  Time flight_time() const {
    return Time::ps(static_cast<std::int64_t>(
        (static_cast<unsigned __int128>(cable_length.as_um()) * delay_per_metre.as_ps() + 500'000) /
        1'000'000));
  }
  template <class V>
  void visit(V& v) {
    v.field("cable_length", cable_length, "cable length between a port and a switch",
            between(Length::um(0), Length::m(100)));
    v.field("delay_per_metre", delay_per_metre, "signal propagation delay per metre of cable");
  }
};

struct SwitchConfig {
  std::uint32_t ports = 64;
  Time latency = Time::ns(150);

  template <class V>
  void visit(V& v) {
    v.field("ports", ports, "ports per switch", between<std::uint32_t>(2, 1024));
    v.field("latency", latency,
            "port-to-port latency at zero load, head in to head out (25.6T class: 150 ns)");
  }
};

enum class Topology : std::uint8_t { SingleSwitch };
inline constexpr std::array<EnumName<Topology>, 1> kTopologyNames{{
    {"single_switch", Topology::SingleSwitch, "every GPU on one UALoE switch"},
}};

struct FabricConfig {
  Topology topology = Topology::SingleSwitch;
  PortConfig port;
  LinkConfig link;
  SwitchConfig switch_;

  template <class V>
  void visit(V& v) {
    v.choice("topology", topology, "how GPUs and switches are wired",
             std::span<const EnumName<Topology>>(kTopologyNames));
    v.section("port", port, "each GPU's UALink port");
    v.section("link", link, "the cables");
    v.section("switch", switch_, "UALoE switches");
  }
};

}  // namespace podsim
