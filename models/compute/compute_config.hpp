#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <string>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

// Accesses of `size` bytes (64 to 256, a multiple of 64) go this far apart: the size rounded up
// to a power of two (192 B: 256), so that none crosses a 256-byte block, and none a page.
constexpr std::uint64_t access_stride(std::uint64_t size) {
  return std::bit_ceil(size);
}

// The compute agent itself (part of every GPU).
struct ComputeConfig {
  Time issue_latency = Time::ns(5);
  Time retry_interval = Time::ns(500);
  Bandwidth reduce_bandwidth = parse_bandwidth("40TB/s");
  double peak_flops = 2.3e15;

  template <class V>
  void visit(V& v) {
    v.field("issue_latency", issue_latency,
            "from a wavefront issuing a load/store to its address reaching GpuVm");
    v.field("retry_interval", retry_interval,
            "how long a wavefront waits before re-issuing an access answered with a retry");
    v.field("reduce_bandwidth", reduce_bandwidth,
            "how fast the GPU's shaders reduce (a collective's sums), in bytes of their inputs: "
            "a reduction of k inputs of B bytes takes k x B at this rate, one after the other "
            "(the loads and stores around it go through VRAM or the fabric as any other)",
            at_least(Bandwidth::gbyte_per_second(1)));
    v.field("peak_flops", peak_flops,
            "a model trace's compute node given as work takes its flops at this rate (FLOP/s) or "
            "its bytes at VRAM's bandwidth, whichever is longer",
            between(1e9, 1e18));
  }
};

// The traffic an agent generates in an access phase.
enum class Pattern : std::uint8_t { Uniform, Stream, PointerChase, Hotspot };
inline constexpr std::array<EnumName<Pattern>, 4> kPatternNames{{
    {"uniform", Pattern::Uniform, "uniformly random addresses over the regions"},
    {"stream", Pattern::Stream, "consecutive addresses through each region in turn (bandwidth)"},
    {"pointer_chase", Pattern::PointerChase,
     "one access at a time, each waiting for the one before (pure latency)"},
    {"hotspot", Pattern::Hotspot,
     "hotspot_fraction of the accesses to the first region, the rest uniform over the others"},
}};

enum class Injection : std::uint8_t { ClosedLoop, Poisson };
inline constexpr std::array<EnumName<Injection>, 2> kInjectionNames{{
    {"closed_loop", Injection::ClosedLoop,
     "keep `outstanding` accesses in flight: a new one as each completes"},
    {"poisson", Injection::Poisson,
     "issue at exponentially distributed intervals for `offered_load`, whatever completes"},
}};

// The traffic an agent generates in an access phase.
struct TrafficConfig {
  std::uint64_t accesses = 2000;
  Time duration;
  Time warmup;
  std::uint64_t warmup_accesses = 0;
  Pattern pattern = Pattern::Uniform;
  double hotspot_fraction = 0.5;
  double local_fraction = 0.0;
  double atomic_fraction = 0.0;
  Injection injection = Injection::ClosedLoop;
  std::uint32_t outstanding = 16;
  double offered_load = 0.5;
  double read_fraction = 0.5;
  Bytes access_size = Bytes(64);
  bool posted_writes = false;
  std::string trace;

  template <class V>
  void visit(V& v) {
    v.field("accesses", accesses,
            "loads and stores each initiating GPU issues (when duration is 0)",
            between<std::uint64_t>(0, 1'000'000'000));
    v.field("duration", duration, "issue for this long instead of a fixed count (0: use accesses)");
    v.field("warmup", warmup,
            "the start of each access phase left out of the measured window: accesses a GPU "
            "issues this soon after its phase starts run as any other but are not measured "
            "(pod.summary.measured.*, every port's and VRAM's measured utilisation)");
    v.field("warmup_accesses", warmup_accesses,
            "the same by count: a GPU's first this-many accesses of each phase are not measured "
            "(with warmup too, an access is measured once both have passed)",
            between<std::uint64_t>(0, 1'000'000'000));
    v.choice("pattern", pattern, "which addresses the accesses go to",
             std::span<const EnumName<Pattern>>(kPatternNames));
    v.field("hotspot_fraction", hotspot_fraction, "hotspot: share of accesses to the hot region",
            between(0.0, 1.0));
    v.field("local_fraction", local_fraction,
            "share of accesses to the GPU's own buffers (the rest to imported ones)",
            between(0.0, 1.0));
    v.field("atomic_fraction", atomic_fraction,
            "share of accesses that are atomics (fetch-and-add: data both ways)",
            between(0.0, 1.0));
    v.choice("injection", injection, "when accesses are issued",
             std::span<const EnumName<Injection>>(kInjectionNames));
    v.field("outstanding", outstanding, "closed_loop: accesses a GPU keeps in flight",
            between<std::uint32_t>(1, 65536));
    v.field("offered_load", offered_load,
            "poisson: the fraction of the GPU's port bandwidth (all planes) its data-carrying "
            "packets (store requests, load responses) would fill",
            between(0.001, 1.0));
    v.field("read_fraction", read_fraction, "fraction of accesses that are loads",
            between(0.0, 1.0));
    v.field("access_size", access_size, "bytes per load or store (64, 128, 192 or 256)",
            between(Bytes(64), Bytes(256)));
    v.field("posted_writes", posted_writes,
            "stores get no response: they complete when issued (for analysis: each link then "
            "carries one packet size)");
    v.field("trace", trace,
            "replay this access trace instead of generating accesses (docs/traces.md; a path "
            "relative to the config file)");
  }
  template <class C>
  void check(C& c) const {
    if (access_size.count() % 64 != 0) c.fail("access_size", "must be a multiple of 64 bytes");
  }
};

}  // namespace podsim
