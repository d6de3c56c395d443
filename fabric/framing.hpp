// What a packet costs on the wire, and which traffic class it travels in.
//
// A packet is transaction-layer (TL) bytes: a header plus the data it carries (loads send a
// bare request and get data back; stores carry data forward and get a bare acknowledgement),
// rounded up to whole TL granules. TL bytes are packed into data-link (DL) flits: each
// dl_flit bytes on the wire carries dl_payload TL bytes; with UALoE each DL flit also pays
// Ethernet framing. podsim packs flits exactly in aggregate: a packet of T TL bytes occupies
// T x (dl_flit + ethernet_overhead) / dl_payload bytes of wire time.
#pragma once

#include <cmath>
#include <string_view>

#include "fabric/fabric_config.hpp"
#include "sim/kernel/access.hpp"

namespace podsim {

// Separate queues and credits per class, so control messages are never stuck behind bulk
// data, and responses never wait for requests (which would allow request-response deadlock).
// Lower value = higher priority.
enum class TrafficClass : std::uint8_t { Control = 0, Response = 1, Request = 2 };
constexpr std::size_t kTrafficClasses = 3;
inline std::string_view traffic_class_name(std::size_t tc) {
  constexpr std::string_view names[] = {"control", "response", "request"};
  return names[tc];
}

inline TrafficClass traffic_class(const Access& a) {
  switch (a.kind) {
    case PacketKind::Control: return TrafficClass::Control;
    case PacketKind::Response: return TrafficClass::Response;
    case PacketKind::Request: return TrafficClass::Request;
  }
  return TrafficClass::Request;
}

inline std::uint64_t payload_bytes_on_wire(const Access& a) {
  switch (a.kind) {
    case PacketKind::Request: return a.op == AccessOp::Write ? a.size : 0;
    case PacketKind::Response: return a.op == AccessOp::Read ? a.size : 0;
    case PacketKind::Control: return a.size;
  }
  return 0;
}

// TL bytes of a packet with `payload` data bytes: header plus data, in whole granules.
inline std::uint64_t tl_bytes(std::uint64_t payload, const PortConfig& p) {
  const std::uint64_t raw = p.tl_header.count() + payload;
  const std::uint64_t g = p.tl_granule.count();
  return (raw + g - 1) / g * g;
}
inline std::uint64_t tl_bytes(const Access& a, const PortConfig& p) {
  return tl_bytes(payload_bytes_on_wire(a), p);
}

// Wire time of `tl` TL bytes at the port's rate, DL framing and Ethernet overhead included,
// rounded up to a whole picosecond.
inline Time wire_time(std::uint64_t tl, const PortConfig& p) {
  const unsigned __int128 bits = static_cast<unsigned __int128>(tl) *
                                 (p.dl_flit.count() + p.ethernet_overhead.count()) * 8 *
                                 1'000'000'000'000ull;
  const unsigned __int128 per_s =
      static_cast<unsigned __int128>(p.dl_payload.count()) * p.rate().bits_per_second();
  return Time::ps(static_cast<std::int64_t>((bits + per_s - 1) / per_s));
}

// Data bytes per wire byte for packets carrying `payload` data bytes each.
inline double payload_efficiency(std::uint64_t payload, const PortConfig& p) {
  const double wire = static_cast<double>(tl_bytes(payload, p)) *
                      static_cast<double>(p.dl_flit.count() + p.ethernet_overhead.count()) /
                      static_cast<double>(p.dl_payload.count());
  return static_cast<double>(payload) / wire;
}

// Probability that one DL flit fails its CRC.
inline double flit_error_probability(const LinkConfig& l, const PortConfig& p) {
  if (l.bit_error_rate > 0) {
    const double bits = static_cast<double>(p.dl_flit.count()) * 8.0;
    return 1.0 - std::pow(1.0 - l.bit_error_rate, bits);
  }
  return l.flit_error_rate;
}

// Link time lost to one replay (go-back-N): the bad flit reaches the receiver, which finds
// the CRC error and sends a NAK back; everything sent meanwhile is sent again.
inline Time replay_penalty(const LinkConfig& l, const PortConfig& p) {
  return wire_time(p.dl_payload.count(), p) + l.flight_time() * 2 + p.tx_latency() +
         p.rx_latency() * 2;
}

}  // namespace podsim
