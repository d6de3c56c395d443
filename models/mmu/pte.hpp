// What a page-table entry says, and how TLBs are flushed: the hardware formats the driver
// programs (plain C++). A declared interface of the models (tests/layers.txt): the driver
// model includes it; nothing else of models/.
//
// A PTE may carry a fragment: 2^fragment pages, aligned and contiguous both in the address
// space and in memory, that one TLB entry can cover (any power of two up to 2 MiB, fragment 9,
// which also ends a walk one level early, as a huge page). amdgpu writes the largest fragment
// that holds, up to its vm_fragment_size (2 MiB by default: amdgpu_vm_pte_fragment in
// drivers/gpu/drm/amd/amdgpu/amdgpu_vm_pt.c, fragment_size 9 in gmc_v9_0.c).
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <utility>

namespace podsim {

constexpr unsigned kPageShift = 12;
constexpr std::uint64_t kPageSize = 1ull << kPageShift;
constexpr unsigned kRadixBits = 9;  // entries per level: 512
constexpr std::uint8_t kFragment64K = 4;
constexpr std::uint8_t kFragment2M = 9;
constexpr std::uint8_t kMaxFragment = kFragment2M;

enum class PteTarget : std::uint8_t { Invalid, Vram, Npa };

struct Pte {
  PteTarget target = PteTarget::Invalid;
  bool writable = false;
  bool retry = false;         // PTE.X = 1 (NPA VM): accesses are answered "retry"
  std::uint8_t fragment = 0;  // log2 of the pages one TLB entry may cover
  std::uint64_t frame = 0;    // VRAM page number, or NPA page number (NPA byte address >> 12)
  std::uint64_t tag = 0;      // NPA VM: the export this page belongs to
  bool valid() const { return target != PteTarget::Invalid; }
};

enum class FlushKind : std::uint8_t { Lightweight = 1, Heavyweight = 2 };

// The largest fragment f <= max_fragment with which pages [i, i + 2^f) of a mapping can be
// mapped: `page(i)` and `frame(i)` both aligned to 2^f, all 2^f of them contiguous in both.
template <class FrameOf>
std::uint8_t best_fragment(std::uint64_t first_page, std::uint64_t i, std::uint64_t count,
                           FrameOf&& frame, std::uint8_t max_fragment = kMaxFragment) {
  if (max_fragment > kMaxFragment) max_fragment = kMaxFragment;
  const std::uint64_t f0 = frame(i);
  // How far the pages stay contiguous from i on (no further than the largest fragment).
  const std::uint64_t limit = std::min<std::uint64_t>(count - i, 1ull << max_fragment);
  std::uint64_t run = 1;
  while (run < limit && frame(i + run) == f0 + run)
    ++run;
  for (std::uint8_t f = max_fragment; f > 0; --f) {
    const std::uint64_t n = 1ull << f;
    if (n <= run && (first_page + i) % n == 0 && f0 % n == 0) return f;
  }
  return 0;
}

// The PTEs of pages [first_page, first_page + count) of a mapping, for PageTable::map's
// `pte_of`, which asks for them in order: `proto` with frame(i), and the fragment
// best_fragment gives the stretch page i begins or lies in, up to proto.fragment (the
// largest the driver writes).
template <class FrameOf>
class FragmentedPtes {
 public:
  FragmentedPtes(const Pte& proto, std::uint64_t first_page, std::uint64_t count, FrameOf frame)
      : proto_(proto), first_(first_page), count_(count), frame_(std::move(frame)) {}
  Pte operator()(std::uint64_t i) {
    if (left_ == 0) {
      fragment_ = best_fragment(first_, i, count_, frame_, proto_.fragment);
      left_ = 1ull << fragment_;
    }
    --left_;
    Pte p = proto_;
    p.frame = frame_(i);
    p.fragment = fragment_;
    return p;
  }

 private:
  Pte proto_;
  std::uint64_t first_, count_;
  FrameOf frame_;
  std::uint64_t left_ = 0;
  std::uint8_t fragment_ = 0;
};

}  // namespace podsim
