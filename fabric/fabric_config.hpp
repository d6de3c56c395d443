// Configuration of the UALoE fabric: the GPUs' UALink ports, the links and the switches, and
// how they are wired. Defaults come from docs/reference/ualink-facts.md.
#pragma once

#include <array>
#include <string>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

// One UALink port (a station's lanes) at either end of a link: the GPU's, or a switch's.
enum class Arbitration : std::uint8_t { StrictPriority, RoundRobin };
inline constexpr std::array<EnumName<Arbitration>, 2> kArbitrationNames{{
    {"strict_priority", Arbitration::StrictPriority,
     "control, then responses, then requests: a class is sent only when those above it have "
     "nothing sendable"},
    {"round_robin", Arbitration::RoundRobin,
     "control first; responses and requests take turns, packet by packet"},
}};

struct PortConfig {
  std::uint32_t lanes = 4;
  Bandwidth lane_rate = Bandwidth::gbit_per_second(200);
  Time pipeline_latency = Time::ns(10);
  Time serdes_latency = Time::ns(8);
  Time fec_latency = Time::ns(20);
  // Framing: packets are transaction-layer bytes (a header plus the data they carry, in whole
  // granules), packed into data-link flits of dl_flit bytes that carry dl_payload bytes of
  // them; with UALoE each DL flit also pays Ethernet framing.
  Bytes tl_header = Bytes(16);
  Bytes tl_granule = Bytes(16);
  Bytes dl_flit = Bytes(640);
  Bytes dl_payload = Bytes(628);
  Bytes ethernet_overhead = Bytes(38);
  Bytes rx_buffer = Bytes::KiB(32);
  Arbitration arbitration = Arbitration::RoundRobin;

  Bandwidth rate() const { return lane_rate * lanes; }
  // Transmit side: TL/DL pipeline then SerDes. Receive side: SerDes, FEC decode, pipeline.
  Time tx_latency() const { return pipeline_latency + serdes_latency; }
  Time rx_latency() const { return serdes_latency + fec_latency + pipeline_latency; }

  template <class V>
  void visit(V& v) {
    v.field("lanes", lanes, "lanes per port (x1, x2 or x4)", between<std::uint32_t>(1, 4));
    v.field("lane_rate", lane_rate,
            "data rate per lane (UALink 200G: 200 Gb/s at 212.5 GT/s signalling)",
            at_least(Bandwidth::gbit_per_second(1)));
    v.field("pipeline_latency", pipeline_latency,
            "transaction- and data-link-layer processing, each side");
    v.field("serdes_latency", serdes_latency, "SerDes latency, each side");
    v.field("fec_latency", fec_latency, "FEC decode latency at the receiver");
    v.field("tl_header", tl_header, "transaction-layer header bytes of each packet",
            between(Bytes(0), Bytes(256)));
    v.field("tl_granule", tl_granule,
            "packets occupy whole granules of this many bytes in the DL flit (64: whole TL flits)",
            between(Bytes(1), Bytes(640)));
    v.field("dl_flit", dl_flit, "data-link flit size on the wire (UALink: 640 B)",
            between(Bytes(64), Bytes::KiB(16)));
    v.field("dl_payload", dl_payload,
            "bytes of transaction-layer data one DL flit carries (UALink: 628 B)",
            between(Bytes(16), Bytes::KiB(16)));
    v.field("ethernet_overhead", ethernet_overhead,
            "UALoE: Ethernet framing per DL flit (preamble, header, FCS, gap: 38 B); 0 for a "
            "native UALink PHY",
            between(Bytes(0), Bytes(256)));
    v.field("rx_buffer", rx_buffer,
            "receive buffer per traffic class, advertised to the sender as credits",
            between(Bytes(64), Bytes::MiB(64)));
    v.choice("arbitration", arbitration,
             "how a sender (GPU port or switch output) picks the traffic class to send next",
             std::span<const EnumName<Arbitration>>(kArbitrationNames));
  }
  template <class C>
  void check(C& c) const {
    if (lanes == 3) c.fail("lanes", "a port uses 1, 2 or 4 lanes");
    if (dl_payload > dl_flit) c.fail("dl_payload", "cannot exceed dl_flit");
  }
};

struct LinkConfig {
  Length cable_length = Length::m(2);
  Time delay_per_metre = Time::ps(5000);
  double flit_error_rate = 0.0;
  double bit_error_rate = 0.0;

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
    v.field("flit_error_rate", flit_error_rate,
            "probability that a DL flit fails its CRC and is replayed", between(0.0, 0.5));
    v.field("bit_error_rate", bit_error_rate,
            "post-FEC bit error rate; a flit fails if any of its bits does (instead of "
            "flit_error_rate)",
            between(0.0, 1e-3));
  }
  template <class C>
  void check(C& c) const {
    if (flit_error_rate > 0 && bit_error_rate > 0)
      c.fail("bit_error_rate", "give flit_error_rate or bit_error_rate, not both");
  }
};

struct SwitchConfig {
  std::uint32_t ports = 64;
  Time latency = Time::ns(150);
  Bytes input_buffer = Bytes::KiB(32);
  Bytes output_buffer = Bytes::KiB(128);

  template <class V>
  void visit(V& v) {
    v.field("ports", ports, "ports per switch", between<std::uint32_t>(2, 1024));
    v.field("latency", latency,
            "port-to-port latency at zero load, head in to head out (25.6T class: 150 ns)");
    v.field("input_buffer", input_buffer,
            "per input port and traffic class; packets wait here while their output queue "
            "is full; advertised upstream as credits",
            between(Bytes(64), Bytes::MiB(64)));
    v.field("output_buffer", output_buffer, "per output port and traffic class: the output queue",
            between(Bytes(64), Bytes::MiB(256)));
  }
};

enum class Topology : std::uint8_t { SingleSwitch, LeafSpine };
inline constexpr std::array<EnumName<Topology>, 2> kTopologyNames{{
    {"single_switch", Topology::SingleSwitch, "every GPU on one switch (per plane)"},
    {"leaf_spine", Topology::LeafSpine,
     "two tiers: GPUs on leaf switches, every leaf linked to every spine (per plane)"},
}};

struct LeafSpineConfig {
  std::uint32_t gpus_per_leaf = 32;
  std::uint32_t spines = 32;

  template <class V>
  void visit(V& v) {
    v.field("gpus_per_leaf", gpus_per_leaf, "GPU ports per leaf switch",
            between<std::uint32_t>(1, 1023));
    v.field("spines", spines, "spine switches (each leaf has one up-link to each)",
            between<std::uint32_t>(1, 1024));
  }
};

struct FabricConfig {
  Topology topology = Topology::SingleSwitch;
  std::uint32_t planes = 1;
  Bytes plane_interleave = Bytes(256);
  LeafSpineConfig leaf_spine;
  PortConfig port;
  LinkConfig link;
  SwitchConfig switch_;

  template <class V>
  void visit(V& v) {
    v.choice("topology", topology, "how each plane's switches are wired",
             std::span<const EnumName<Topology>>(kTopologyNames));
    v.field("planes", planes,
            "independent switch planes; each GPU has one port per plane, and remote accesses "
            "are spread across planes by a hash of their address (Helios-like)",
            between<std::uint32_t>(1, 64));
    v.field("plane_interleave", plane_interleave,
            "address granule the plane hash works on (accesses in one granule take one plane)",
            between(Bytes(64), Bytes::MiB(2)));
    v.section("leaf_spine", leaf_spine, "leaf_spine topology");
    v.section("port", port, "UALink ports (GPUs' and switches')");
    v.section("link", link, "the cables");
    v.section("switch", switch_, "UALoE switches");
  }
};

}  // namespace podsim
