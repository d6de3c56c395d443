// What a page-table entry says, and how TLBs are flushed: the hardware formats the driver
// programs (plain C++). A declared interface of the models (tests/layers.txt): the driver
// model includes it; nothing else of models/.
//
// A PTE may carry a fragment: 2^fragment pages, aligned and contiguous both in the address
// space and in memory, that one TLB entry can cover (64 KiB: fragment 4; 2 MiB: fragment 9,
// which also ends a walk one level early, as a huge page).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <utility>

namespace podsim {

constexpr unsigned kPageShift = 12;
constexpr std::uint64_t kPageSize = 1ull << kPageShift;
constexpr unsigned kRadixBits = 9;  // entries per level: 512
constexpr std::uint8_t kFragment64K = 4;
constexpr std::uint8_t kFragment2M = 9;

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

// The largest fragment (0, 4 or 9) with which pages [i, i + 2^f) of a mapping can be mapped:
// `page(i)` and `frame(i)` both aligned to 2^f, all 2^f of them contiguous in both.
template <class FrameOf>
std::uint8_t best_fragment(std::uint64_t first_page, std::uint64_t i, std::uint64_t count,
                           FrameOf&& frame) {
  for (std::uint8_t f : {kFragment2M, kFragment64K}) {
    const std::uint64_t n = 1ull << f;
    if (i + n > count || (first_page + i) % n != 0 || frame(i) % n != 0) continue;
    bool contiguous = true;
    for (std::uint64_t k = 1; k < n && contiguous; ++k)
      contiguous = frame(i + k) == frame(i) + k;
    if (contiguous) return f;
  }
  return 0;
}

// The PTEs of pages [first_page, first_page + count) of a mapping, for PageTable::map's
// `pte_of`, which asks for them in order: `proto` with frame(i), and the fragment
// best_fragment gives the stretch page i begins or lies in.
template <class FrameOf>
class FragmentedPtes {
 public:
  FragmentedPtes(const Pte& proto, std::uint64_t first_page, std::uint64_t count, FrameOf frame)
      : proto_(proto), first_(first_page), count_(count), frame_(std::move(frame)) {}
  Pte operator()(std::uint64_t i) {
    if (left_ == 0) {
      fragment_ = best_fragment(first_, i, count_, frame_);
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
