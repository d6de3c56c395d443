// What the configuration says a run must give, computed from the resolved config (the
// config.json a run writes) with no help from the model: the validation tier compares these
// with what podsim measured.
#pragma once

#include <boost/json.hpp>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "sim/core/units.hpp"

namespace podsim::analysis {

using Path = std::initializer_list<const char*>;

inline const boost::json::value& at(const boost::json::value& cfg, Path path) {
  const boost::json::value* v = &cfg;
  for (const char* k : path)
    v = &v->at(k);
  return *v;
}
inline std::int64_t ps(const boost::json::value& cfg, Path path) {
  return parse_time(std::string(at(cfg, path).as_string())).as_ps();
}
inline std::uint64_t num(const boost::json::value& cfg, Path path) {
  return at(cfg, path).to_number<std::uint64_t>();
}
inline std::uint64_t bytes(const boost::json::value& cfg, Path path) {
  return parse_bytes(std::string(at(cfg, path).as_string())).count();
}
inline std::uint64_t bps(const boost::json::value& cfg, Path path) {
  return parse_bandwidth(std::string(at(cfg, path).as_string())).bits_per_second();
}

// ceil(bytes * 8 / rate) in ps.
inline std::int64_t serialize_ps(std::uint64_t n, std::uint64_t rate) {
  const unsigned __int128 bits = static_cast<unsigned __int128>(n) * 8 * 1'000'000'000'000ull;
  return static_cast<std::int64_t>((bits + rate - 1) / rate);
}

inline std::uint64_t port_rate(const boost::json::value& c) {
  return bps(c, {"fabric", "port", "lane_rate"}) * num(c, {"fabric", "port", "lanes"});
}

// TL bytes of a packet carrying `payload` data bytes: header plus data, in whole granules.
inline std::uint64_t tl_bytes(const boost::json::value& c, std::uint64_t payload) {
  const std::uint64_t header = bytes(c, {"fabric", "port", "tl_header"});
  const std::uint64_t granule = bytes(c, {"fabric", "port", "tl_granule"});
  return (header + payload + granule - 1) / granule * granule;
}

// Wire bytes per TL byte: DL flits carry dl_payload TL bytes in dl_flit wire bytes, and with
// UALoE each flit also pays Ethernet framing.
inline double wire_per_tl(const boost::json::value& c) {
  return static_cast<double>(bytes(c, {"fabric", "port", "dl_flit"}) +
                             bytes(c, {"fabric", "port", "ethernet_overhead"})) /
         static_cast<double>(bytes(c, {"fabric", "port", "dl_payload"}));
}

// Wire time of `tl` TL bytes, ps, rounded up (as exact as the config's units allow).
inline std::int64_t tl_wire_ps(const boost::json::value& c, std::uint64_t tl) {
  const std::uint64_t flit = bytes(c, {"fabric", "port", "dl_flit"});
  const std::uint64_t carried = bytes(c, {"fabric", "port", "dl_payload"});
  const std::uint64_t eth = bytes(c, {"fabric", "port", "ethernet_overhead"});
  const unsigned __int128 bits =
      static_cast<unsigned __int128>(tl) * (flit + eth) * 8 * 1'000'000'000'000ull;
  const unsigned __int128 per_s = static_cast<unsigned __int128>(carried) * port_rate(c);
  return static_cast<std::int64_t>((bits + per_s - 1) / per_s);
}
inline std::int64_t packet_wire_ps(const boost::json::value& c, std::uint64_t payload) {
  return tl_wire_ps(c, tl_bytes(c, payload));
}

// Data bytes per wire byte for packets carrying `payload` data bytes.
inline double payload_efficiency(const boost::json::value& c, std::uint64_t payload) {
  return static_cast<double>(payload) /
         (static_cast<double>(tl_bytes(c, payload)) * wire_per_tl(c));
}

inline std::int64_t flight_ps(const boost::json::value& c) {
  const std::uint64_t um =
      parse_length(std::string(at(c, {"fabric", "link", "cable_length"}).as_string())).as_um();
  return static_cast<std::int64_t>((um * ps(c, {"fabric", "link", "delay_per_metre"}) + 500'000) /
                                   1'000'000);
}
inline std::int64_t port_tx_ps(const boost::json::value& c) {
  return ps(c, {"fabric", "port", "pipeline_latency"}) +
         ps(c, {"fabric", "port", "serdes_latency"});
}
inline std::int64_t port_rx_ps(const boost::json::value& c) {
  return ps(c, {"fabric", "port", "serdes_latency"}) + ps(c, {"fabric", "port", "fec_latency"}) +
         ps(c, {"fabric", "port", "pipeline_latency"});
}

// The levels a walk of the exporter's NPA page table reads for the first page of a buffer
// exported in source-aliasing mode, after setup. The control path's writes (transport
// npa_writes) walk the table for the rings' receive pages, pages [512, 1024), the last of them
// after the exporter mapped the buffer's range (page 0x800 up) and flushed its NPA TLB; its
// page-walk cache then holds the upper levels those pages share with the buffer's range
// (levels split the page number 9 bits each), and the walk reads only the levels below the
// deepest of them. With no page-walk cache, or the control class, it reads every level.
inline std::int64_t npa_walk_levels_read(const boost::json::value& c) {
  const auto levels = static_cast<std::uint32_t>(num(c, {"gpu", "npa_mmu", "walk_levels"}));
  if (at(c, {"gpu", "mailbox", "transport"}).as_string() != "npa_writes" ||
      num(c, {"gpu", "npa_mmu", "pwc_entries"}) == 0)
    return levels;
  constexpr std::uint64_t kRingPage = 512, kBufferPage = 0x800;
  std::uint32_t deepest = levels;
  for (std::uint32_t l = levels - 1; l >= 1 && (kRingPage >> (9 * l)) == (kBufferPage >> (9 * l));
       --l)
    deepest = l;
  return deepest;
}

// One remote read of `size` bytes at zero load through `switches` switches (so switches + 1
// links each way), both TLBs cold: the sum of every component on its path.
inline std::int64_t zero_load_read_ps(const boost::json::value& c, std::uint64_t size,
                                      std::uint32_t switches) {
  // A cold translation: both TLB lookups miss, and the walk reads `levels` levels.
  auto cold = [&](const char* mmu, std::int64_t levels) {
    return ps(c, {"gpu", mmu, "l1", "latency"}) + ps(c, {"gpu", mmu, "l2", "latency"}) +
           levels * ps(c, {"gpu", mmu, "walk_level_latency"});
  };
  const std::int64_t gpuvm =
      cold("gpuvm", static_cast<std::int64_t>(num(c, {"gpu", "gpuvm", "walk_levels"})));
  const std::int64_t npa = cold("npa_mmu", npa_walk_levels_read(c));
  const std::int64_t vram = ps(c, {"gpu", "vram", "access_latency"}) +
                            serialize_ps(size, bps(c, {"gpu", "vram", "channel_bandwidth"}));
  const std::int64_t issue = ps(c, {"gpu", "compute", "issue_latency"});
  const std::int64_t fabric = (switches + 1) * flight_ps(c) +
                              switches * ps(c, {"fabric", "switch", "latency"}) + port_tx_ps(c) +
                              port_rx_ps(c);
  // Cut-through: a packet's wire time is paid once, where its tail arrives.
  const std::int64_t request = fabric + packet_wire_ps(c, 0);
  const std::int64_t response = fabric + packet_wire_ps(c, size);
  return issue + gpuvm + request + npa + vram + response;
}

// Link time lost to one go-back-N replay: the bad flit, the NAK's way back.
inline std::int64_t replay_penalty_ps(const boost::json::value& c) {
  return tl_wire_ps(c, bytes(c, {"fabric", "port", "dl_payload"})) + 2 * flight_ps(c) +
         port_tx_ps(c) + 2 * port_rx_ps(c);
}

}  // namespace podsim::analysis
