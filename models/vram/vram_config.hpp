#pragma once

#include "sim/base/params.hpp"
#include "sim/base/units.hpp"

namespace podsim {

// Defaults: an MI400-class GPU of the AMD Helios rack, 432 GB HBM4 at 19.6 TB/s
// (../shared/reference/ualink-facts.md), spread over 16 channels.
struct VramConfig {
  Bytes capacity = Bytes(432'000'000'000ull);
  std::uint32_t channels = 16;
  Bandwidth channel_bandwidth = parse_bandwidth("1.225TB/s");  // 19.6 TB/s / 16
  Time access_latency = Time::ns(120);
  Bytes interleave = Bytes(256);

  template <class V>
  void visit(V& v) {
    v.field("capacity", capacity, "VRAM capacity (whole 4 KiB pages are usable)",
            at_least(Bytes::MiB(4)));
    v.field("channels", channels, "independent memory channels", between<std::uint32_t>(1, 1024));
    v.field("channel_bandwidth", channel_bandwidth, "data rate of one channel",
            at_least(parse_bandwidth("1Gb/s")));
    v.field("access_latency", access_latency,
            "time from a request's turn on its channel to its data (excluding the transfer)");
    v.field("interleave", interleave, "bytes mapped to one channel before moving to the next",
            between(Bytes(64), Bytes::MiB(2)));
  }
  template <class C>
  void check(C& c) const {
    std::uint64_t n = interleave.count();
    if ((n & (n - 1)) != 0) c.fail("interleave", "must be a power of two");
  }
};

}  // namespace podsim
