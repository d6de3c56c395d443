// A page table (plain C++), for a process's GPUVM or for an exporter's NPA VM: 4 KiB pages,
// each pointing at a local VRAM page, at an NPA page (remote memory), or nothing.
//
// It is walked as a radix tree of `levels` levels of 512 entries (9 bits each); what a walk
// costs is decided by MmuCore. A PTE may carry a fragment: 2^fragment pages, aligned and
// contiguous both in the address space and in memory, that one TLB entry can cover (64 KiB:
// fragment 4; 2 MiB: fragment 9, which also ends the walk one level early, as a huge page).
#pragma once

#include <algorithm>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/base/digest.hpp"

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

class PageTable {
 public:
  void map(std::uint64_t page, const Pte& pte) { ptes_[page] = pte; }
  void unmap(std::uint64_t page) { ptes_.erase(page); }
  Pte* find(std::uint64_t page) {
    auto it = ptes_.find(page);
    return it == ptes_.end() ? nullptr : &it->second;
  }
  // The PTE for a page; an Invalid one when nothing is mapped there.
  Pte lookup(std::uint64_t page) const {
    auto it = ptes_.find(page);
    return it == ptes_.end() ? Pte{} : it->second;
  }
  std::size_t mapped_pages() const { return ptes_.size(); }
  void clear() { ptes_.clear(); }
  // Every mapping, in page order.
  void digest(Digest& d) const {
    std::vector<std::pair<std::uint64_t, Pte>> all(ptes_.begin(), ptes_.end());
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    d.add(all.size());
    for (const auto& [page, p] : all)
      d.add(page)
          .add(static_cast<std::uint64_t>(p.target))
          .add(p.writable)
          .add(p.retry)
          .add(p.fragment)
          .add(p.frame)
          .add(p.tag);
  }
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (const auto& [page, pte] : ptes_)
      fn(page, pte);
  }

 private:
  // Open addressing (Boost.Unordered's flat map): a walk's lookup reads one group of slots,
  // not a bucket and a node.
  boost::unordered_flat_map<std::uint64_t, Pte> ptes_;
};

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

}  // namespace podsim
