// A page table (plain C++), for a process's GPUVM or for an exporter's NPA VM: 4 KiB pages,
// each pointing at a local VRAM page, at an NPA page (remote memory), or nothing.
//
// It is walked as a radix tree of `levels` levels of 512 entries (9 bits each); what a walk
// costs is decided by MmuCore. Its entries are Ptes (models/mmu/pte.hpp).
#pragma once

#include <algorithm>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/mmu/pte.hpp"
#include "sim/core/digest.hpp"

namespace podsim {

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

}  // namespace podsim
