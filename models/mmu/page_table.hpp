// A page table (plain C++), for a process's GPUVM or for an exporter's NPA VM: 4 KiB pages,
// each pointing at a local VRAM page, at an NPA page (remote memory), or nothing.
//
// It is walked as a radix tree of `levels` levels of 512 entries (9 bits each); what a walk
// costs is decided by MmuCore. Its entries are Ptes (models/mmu/pte.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "models/mmu/pte.hpp"
#include "sim/core/digest.hpp"

namespace podsim {

class PageTable {
 public:
  void map(std::uint64_t page, const Pte& pte);
  void unmap(std::uint64_t page);
  // Changes the PTE of a mapped page through `fn(Pte&)`; nothing if the page is not mapped.
  template <class Fn>
  void update(std::uint64_t page, Fn&& fn) {
    const std::size_t i = run_of(page);
    if (i == kNone) return;
    Pte p = pte_in(i, page);
    fn(p);
    map(page, p);
  }
  // The PTE for a page; an Invalid one when nothing is mapped there.
  Pte lookup(std::uint64_t page) const {
    const std::size_t i = run_of(page);
    return i == kNone ? Pte{} : pte_in(i, page);
  }
  std::size_t mapped_pages() const { return pages_; }
  // Runs of pages stored (for tests and sizing): pages in a row whose PTEs differ only in a
  // frame that counts up with the page are one run.
  std::size_t runs() const { return first_.size(); }
  void clear() {
    first_.clear();
    runs_.clear();
    pages_ = 0;
  }
  // Every mapping, in page order.
  void digest(Digest& d) const {
    d.add(static_cast<std::size_t>(pages_));
    for_each([&](std::uint64_t page, const Pte& p) {
      d.add(page)
          .add(static_cast<std::uint64_t>(p.target))
          .add(p.writable)
          .add(p.retry)
          .add(p.fragment)
          .add(p.frame)
          .add(p.tag);
    });
  }
  // fn(page, pte) for every mapped page, in page order.
  template <class Fn>
  void for_each(Fn&& fn) const {
    for (std::size_t i = 0; i < first_.size(); ++i)
      for (std::uint64_t k = 0; k < runs_[i].count; ++k)
        fn(first_[i] + k, pte_in(i, first_[i] + k));
  }

 private:
  // Pages [first, first + count) map to frames [base.frame, base.frame + count), all else
  // equal. A simulated walk reads a handful of these (a binary search over the runs' first
  // pages, kept apart so the search touches few cache lines) instead of a hash table as big
  // as the mapping: a process's imports are one run each, an export one per scattered run.
  struct Run {
    std::uint64_t count;
    Pte base;
  };
  static constexpr std::size_t kNone = ~std::size_t{0};
  std::size_t run_of(std::uint64_t page) const {
    const auto it = std::upper_bound(first_.begin(), first_.end(), page);
    if (it == first_.begin()) return kNone;
    const auto i = static_cast<std::size_t>(it - first_.begin()) - 1;
    return page - first_[i] < runs_[i].count ? i : kNone;
  }
  Pte pte_in(std::size_t i, std::uint64_t page) const {
    Pte p = runs_[i].base;
    p.frame += page - first_[i];
    return p;
  }
  // Run i followed by page `page` mapped as `p` continues it.
  bool continues(std::size_t i, std::uint64_t page, const Pte& p) const;
  // Makes `page` (inside run i) a run of its own; returns its index.
  std::size_t isolate(std::size_t i, std::uint64_t page);
  // Joins run i with the run after it where they continue each other.
  void join_next(std::size_t i);

  std::vector<std::uint64_t> first_;  // by run, ascending
  std::vector<Run> runs_;
  std::uint64_t pages_ = 0;
};

}  // namespace podsim
