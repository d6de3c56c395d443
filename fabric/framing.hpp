// What a packet costs on the wire (plain C++; fabric/traffic.hpp applies it to packets).
//
// A packet is transaction-layer (TL) bytes: a header plus the data it carries, rounded up to
// whole TL granules. TL bytes are packed into data-link (DL) flits: each
// dl_flit bytes on the wire carries dl_payload TL bytes; with UALoE each DL flit also pays
// Ethernet framing. podsim packs flits exactly in aggregate: a packet of T TL bytes occupies
// T x (dl_flit + ethernet_overhead) / dl_payload bytes of wire time.
#pragma once

#include <cmath>
#include <string_view>
#include <vector>

#include "fabric/fabric_config.hpp"

namespace podsim {

// TL bytes of a packet with `payload` data bytes: header plus data, in whole granules.
inline std::uint64_t tl_bytes(std::uint64_t payload, const PortConfig& p) {
  const std::uint64_t raw = p.tl_header.count() + payload;
  const std::uint64_t g = p.tl_granule.count();
  return (raw + g - 1) / g * g;
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

// The same costs for one port, worked out once per TL size, so the hot path looks them up
// instead of dividing 128-bit numbers.
class WireCosts {
 public:
  explicit WireCosts(const PortConfig& p)
      : header_(p.tl_header.count()),
        granule_(p.tl_granule.count()),
        pow2_((granule_ & (granule_ - 1)) == 0),
        shift_(static_cast<unsigned>(__builtin_ctzll(granule_))),
        port_(p) {
    for (std::uint64_t tl = 0; tl <= podsim::tl_bytes(kMaxPayload, p); tl += granule_)
      costs_.push_back(
          Cost{podsim::wire_time(tl, p),
               tl * (p.dl_flit.count() + p.ethernet_overhead.count()) / p.dl_payload.count()});
  }
  static constexpr std::uint64_t kMaxPayload = 256;

  std::uint64_t tl_bytes(std::uint64_t payload) const {
    const std::uint64_t raw = header_ + payload + granule_ - 1;
    return pow2_ ? raw >> shift_ << shift_ : raw / granule_ * granule_;
  }
  // Wire time and wire bytes (framing and Ethernet overhead included) of `tl` TL bytes.
  Time wire_time(std::uint64_t tl) const {
    const std::uint64_t i = pow2_ ? tl >> shift_ : tl / granule_;
    return i < costs_.size() ? costs_[i].time : podsim::wire_time(tl, port_);
  }
  std::uint64_t wire_bytes(std::uint64_t tl) const {
    const std::uint64_t i = pow2_ ? tl >> shift_ : tl / granule_;
    return i < costs_.size() ? costs_[i].bytes
                             : tl * (port_.dl_flit.count() + port_.ethernet_overhead.count()) /
                                   port_.dl_payload.count();
  }

 private:
  struct Cost {
    Time time;
    std::uint64_t bytes;
  };
  std::uint64_t header_, granule_;
  bool pow2_;
  unsigned shift_;
  std::vector<Cost> costs_;  // by TL size / granule
  PortConfig port_;          // (after what every packet reads: for sizes beyond the table)
};

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
