// What a packet costs on the wire (plain C++; fabric/traffic.hpp applies it to packets).
//
// A packet is transaction-layer (TL) bytes: a header plus the data it carries, rounded up to
// whole TL granules. TL bytes are packed into data-link (DL) flits: each
// dl_flit bytes on the wire carries dl_payload TL bytes; with UALoE each DL flit also pays
// Ethernet framing. podsim packs flits exactly in aggregate: a packet of T TL bytes occupies
// T x (dl_flit + ethernet_overhead) / dl_payload bytes of wire time.
#pragma once

#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
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

// Bytes of wire time of `tl` TL bytes: DL framing and Ethernet overhead included.
inline std::uint64_t wire_bytes(std::uint64_t tl, const PortConfig& p) {
  return tl * (p.dl_flit.count() + p.ethernet_overhead.count()) / p.dl_payload.count();
}

// The same costs for one port, worked out once per TL size, so the hot path looks them up
// instead of dividing 128-bit numbers. Ports that cost the same share one table (every port
// of a pod, as a rule): what a packet reads of it stays in the host's caches however many
// ports the pod has. Copies share it too.
class WireCosts {
 public:
  explicit WireCosts(const PortConfig& p) : t_(shared_table(p)) {}
  static constexpr std::uint64_t kMaxPayload = 256;

  std::uint64_t tl_bytes(std::uint64_t payload) const {
    const Table& t = *t_;
    const std::uint64_t raw = t.header + payload + t.granule - 1;
    return t.pow2 ? raw >> t.shift << t.shift : raw / t.granule * t.granule;
  }
  // Wire time and wire bytes (framing and Ethernet overhead included) of `tl` TL bytes.
  Time wire_time(std::uint64_t tl) const {
    const Table& t = *t_;
    const std::uint64_t i = t.index(tl);
    return i < t.costs.size() ? t.costs[i].time : podsim::wire_time(tl, t.port);
  }
  std::uint64_t wire_bytes(std::uint64_t tl) const {
    const Table& t = *t_;
    const std::uint64_t i = t.index(tl);
    return i < t.costs.size() ? t.costs[i].bytes : podsim::wire_bytes(tl, t.port);
  }

 private:
  struct Cost {
    Time time;
    std::uint64_t bytes;
  };
  struct Table {
    explicit Table(const PortConfig& p)
        : header(p.tl_header.count()),
          granule(p.tl_granule.count()),
          pow2((granule & (granule - 1)) == 0),
          shift(static_cast<unsigned>(__builtin_ctzll(granule))),
          port(p) {
      for (std::uint64_t tl = 0; tl <= podsim::tl_bytes(kMaxPayload, p); tl += granule)
        costs.push_back(Cost{podsim::wire_time(tl, p), podsim::wire_bytes(tl, p)});
    }
    std::uint64_t index(std::uint64_t tl) const { return pow2 ? tl >> shift : tl / granule; }
    std::uint64_t header, granule;
    bool pow2;
    unsigned shift;
    std::vector<Cost> costs;  // by TL size / granule
    PortConfig port;          // (after what every packet reads: for sizes beyond the table)
  };
  // The table of ports framed and clocked as `p` (made, or found among those in use).
  static std::shared_ptr<const Table> shared_table(const PortConfig& p) {
    // Everything a table is made of (of a port, tl_bytes, wire_time and wire_bytes read
    // nothing else).
    using Key = std::array<std::uint64_t, 6>;
    const Key key{p.tl_header.count(),         p.tl_granule.count(), p.dl_flit.count(),
                  p.ethernet_overhead.count(), p.dl_payload.count(), p.rate().bits_per_second()};
    static std::mutex mutex;
    static std::map<Key, std::weak_ptr<const Table>> tables;  // a table lives while it is used
    const std::lock_guard lock(mutex);
    std::weak_ptr<const Table>& known = tables[key];
    std::shared_ptr<const Table> t = known.lock();
    if (!t) {
      t = std::make_shared<const Table>(p);
      known = t;
    }
    return t;
  }
  // Shared by every WireCosts of ports that cost the same: each port keeps a pointer, and the
  // table it points to stays in the host's caches.
  std::shared_ptr<const Table> t_;
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
