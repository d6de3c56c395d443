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
  // Mapping or unmapping pages one by one in order, forwards or backwards, costs O(log runs)
  // a page; a run is inserted or erased (moving the runs after it) only where one begins or
  // ends, so a buffer of any size is mapped and unmapped in time linear in its pages.
  void map(std::uint64_t page, const Pte& pte);
  // Pages [first, first + count) mapped as `pte_of(i)` gives the i-th (what was there is
  // replaced): the runs built apart and put in with one move, so mapping a range below many
  // runs costs one shift of them, not one a page.
  template <class Fn>
  void map(std::uint64_t first, std::uint64_t count, Fn&& pte_of);
  // Pages [first, first + count) mapped to frames base.frame, base.frame + 1, ..., each PTE
  // otherwise `base` (what was there is replaced): one run put in, whatever the count.
  void map_contiguous(std::uint64_t first, std::uint64_t count, const Pte& base);
  void unmap(std::uint64_t page);
  // Pages [first, first + count) unmapped: the runs inside erased together.
  void unmap(std::uint64_t first, std::uint64_t count);
  // Whether any page of [first, first + count) is mapped.
  bool any_mapped(std::uint64_t first, std::uint64_t count) const;
  // Changes the PTE of a mapped page through `fn(Pte&)`; nothing if the page is not mapped.
  template <class Fn>
  void update(std::uint64_t page, Fn&& fn) {
    const std::size_t i = run_of(page);
    if (i == kNone) return;
    Pte p = pte_in(i, page);
    fn(p);
    map(page, p);
  }
  // Changes the PTEs of the mapped pages of [first, first + count) through `fn(Pte&)`, which
  // must leave the frame alone (it is applied to each run's first PTE); one pass over the runs.
  template <class Fn>
  void update(std::uint64_t first, std::uint64_t count, Fn&& fn) {
    update_runs(first, count, [&](Pte& p) { fn(p); });
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
  // Runs moved by inserts and erases so far (what map and unmap cost beyond the search;
  // deterministic, for tests of their complexity).
  std::uint64_t shifted() const { return shifted_; }
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
  // PTEs equal in everything but their frame.
  static bool same_but_frame(const Pte& a, const Pte& b) {
    return a.target == b.target && a.writable == b.writable && a.retry == b.retry &&
           a.fragment == b.fragment && a.tag == b.tag;
  }
  // The runs [lo, hi) that overlap pages [first, end) (the first and the last may reach
  // beyond them); lo >= hi when none does.
  std::pair<std::size_t, std::size_t> overlapping(std::uint64_t first, std::uint64_t end) const;
  // update(first, count, fn) without the template.
  template <class Fn>
  void update_runs(std::uint64_t first, std::uint64_t count, const Fn& fn);
  // Joins run i with the run after it where they continue each other.
  void join_next(std::size_t i);
  // Inserts run {first, r} at index i, or erases runs [i, i + n): counted in shifted_.
  void insert_run(std::size_t i, std::uint64_t first, const Run& r);
  // Inserts the runs (firsts[k], runs[k]), ascending, over unmapped pages between the runs
  // around them, joining them with those where they continue each other.
  void insert_runs(const std::vector<std::uint64_t>& firsts, const std::vector<Run>& runs);
  void erase_runs(std::size_t i, std::size_t n);

  std::vector<std::uint64_t> first_;  // by run, ascending
  std::vector<Run> runs_;
  std::uint64_t pages_ = 0;
  std::uint64_t shifted_ = 0;
};

template <class Fn>
void PageTable::map(std::uint64_t first, std::uint64_t count, Fn&& pte_of) {
  if (count == 0) return;
  unmap(first, count);
  std::vector<std::uint64_t> firsts;
  std::vector<Run> runs;
  for (std::uint64_t i = 0; i < count; ++i) {
    const Pte p = pte_of(i);
    if (!runs.empty()) {
      Run& b = runs.back();
      if (b.base.frame + b.count == p.frame && same_but_frame(b.base, p)) {
        ++b.count;
        continue;
      }
    }
    firsts.push_back(first + i);
    runs.push_back(Run{1, p});
  }
  pages_ += count;
  insert_runs(firsts, runs);
}

template <class Fn>
void PageTable::update_runs(std::uint64_t first, std::uint64_t count, const Fn& fn) {
  if (count == 0) return;
  const std::uint64_t end = first + count;
  const auto [lo, hi] = overlapping(first, end);
  if (lo >= hi) return;
  // The runs [from, to): the ones touched and a neighbour each side (they may join), rebuilt
  // in `out` and put back in one move.
  const std::size_t from = lo > 0 ? lo - 1 : lo, to = hi < first_.size() ? hi + 1 : hi;
  std::vector<std::uint64_t> firsts;
  std::vector<Run> out;
  auto push = [&](std::uint64_t f, Run r) {
    if (r.count == 0) return;
    if (!out.empty()) {
      const Run& b = out.back();
      if (firsts.back() + b.count == f && b.base.frame + b.count == r.base.frame &&
          same_but_frame(b.base, r.base)) {
        out.back().count += r.count;
        return;
      }
    }
    firsts.push_back(f);
    out.push_back(r);
  };
  for (std::size_t k = from; k < to; ++k) {
    const std::uint64_t f = first_[k], e = f + runs_[k].count;
    const Run& r = runs_[k];
    if (k < lo || k >= hi) {
      push(f, r);
      continue;
    }
    const std::uint64_t a = std::max(f, first), b = std::min(e, end);
    push(f, Run{a - f, r.base});
    Run mid{b - a, r.base};
    mid.base.frame += a - f;
    fn(mid.base);
    push(a, mid);
    Run tail{e - b, r.base};
    tail.base.frame += b - f;
    push(b, tail);
  }
  const std::size_t had = to - from, now = out.size();
  const auto at = static_cast<std::ptrdiff_t>(from);
  if (now != had) {
    shifted_ += first_.size() - to;
    first_.erase(first_.begin() + at, first_.begin() + static_cast<std::ptrdiff_t>(to));
    runs_.erase(runs_.begin() + at, runs_.begin() + static_cast<std::ptrdiff_t>(to));
    first_.insert(first_.begin() + at, firsts.begin(), firsts.end());
    runs_.insert(runs_.begin() + at, out.begin(), out.end());
  } else {
    std::copy(firsts.begin(), firsts.end(), first_.begin() + at);
    std::copy(out.begin(), out.end(), runs_.begin() + at);
  }
}

}  // namespace podsim
