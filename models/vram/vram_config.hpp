#pragma once

#include <array>

#include "models/mmu/pte.hpp"
#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

enum class VramAllocation : std::uint8_t { FirstFit, Scattered, Blocks };
inline constexpr std::array<EnumName<VramAllocation>, 3> kVramAllocationNames{{
    {"first_fit", VramAllocation::FirstFit, "the lowest free pages (a freshly booted device)"},
    {"scattered", VramAllocation::Scattered,
     "runs of about scatter_run at random places (a device that has been running a while, "
     "its pages handed out one by one)"},
    {"blocks", VramAllocation::Blocks,
     "aligned power-of-two blocks, the largest that fit up to block_size, at random places "
     "(amdgpu's buddy allocator on a device that has been running a while)"},
}};

// Defaults: an MI400-class GPU of the AMD Helios rack, 432 GB HBM4 at 19.6 TB/s
// (docs/reference/ualink-facts.md): 12 stacks of 16 channels at 102.08 GB/s each.
struct VramConfig {
  Bytes capacity = Bytes(432'000'000'000ull);
  std::uint32_t stacks = 12;
  std::uint32_t channels_per_stack = 16;
  Bandwidth channel_bandwidth = parse_bandwidth("102.08GB/s");
  Time access_latency = Time::ns(120);
  Bytes interleave = Bytes(256);
  VramAllocation allocation = VramAllocation::Blocks;
  Bytes scatter_run = Bytes::KiB(64);
  Bytes block_size = Bytes::MiB(2);
  bool clear_on_free = true;
  Bandwidth clear_bandwidth = parse_bandwidth("1TB/s");
  bool functional_data = true;

  std::uint32_t channels() const { return stacks * channels_per_stack; }

  template <class V>
  void visit(V& v) {
    v.field("capacity", capacity, "VRAM capacity (whole 4 KiB pages are usable)",
            at_least(Bytes::MiB(4)));
    v.field("stacks", stacks, "HBM stacks", between<std::uint32_t>(1, 64));
    v.field("channels_per_stack", channels_per_stack, "independent channels per stack",
            between<std::uint32_t>(1, 64));
    v.field("channel_bandwidth", channel_bandwidth, "data rate of one channel",
            at_least(parse_bandwidth("1Gb/s")));
    v.field("access_latency", access_latency,
            "time from a request's turn on its channel to its data (besides the transfer)");
    v.field("interleave", interleave,
            "bytes mapped to one channel before the next (channels in stack-major order)",
            between(Bytes(64), Bytes::MiB(2)));
    v.choice("allocation", allocation, "where new buffers' pages come from",
             std::span<const EnumName<VramAllocation>>(kVramAllocationNames));
    v.field("scatter_run", scatter_run, "scattered: mean length of a contiguous run of pages",
            between(Bytes(kPageSize), Bytes::MiB(64)));
    v.field("block_size", block_size,
            "blocks: the largest block a buffer gets (amdgpu's VRAM manager asks the buddy "
            "allocator for 2 MiB blocks: pages_per_block in amdgpu_vram_mgr.c; a smaller buffer "
            "gets the power-of-two blocks that make it up)",
            between(Bytes(kPageSize), Bytes::GiB(1)));
    v.field("clear_on_free", clear_on_free,
            "freed pages are zeroed by a clearing engine before they can be allocated again");
    v.field("clear_bandwidth", clear_bandwidth,
            "the clearing engine's peak rate (it also competes for the channels)",
            at_least(parse_bandwidth("1Gb/s")));
    v.field("functional_data", functional_data,
            "keep what stores write, so loads (and the exporter) read it back; off for speed "
            "studies: nothing is stored, a load's data is left unfilled (its bytes are "
            "meaningless) and every timing result is the same");
  }
  template <class C>
  void check(C& c) const {
    std::uint64_t n = interleave.count();
    if ((n & (n - 1)) != 0) c.fail("interleave", "must be a power of two");
    if (scatter_run.count() % kPageSize != 0) c.fail("scatter_run", "must be whole 4 KiB pages");
    const std::uint64_t b = block_size.count();
    if ((b & (b - 1)) != 0) c.fail("block_size", "must be a power of two");
  }
};

}  // namespace podsim
