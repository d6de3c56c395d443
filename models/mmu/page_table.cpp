#include "models/mmu/page_table.hpp"

namespace podsim {

bool PageTable::continues(std::size_t i, std::uint64_t page, const Pte& p) const {
  const Run& r = runs_[i];
  return first_[i] + r.count == page && same_but_frame(r.base, p) &&
         r.base.frame + r.count == p.frame;
}

void PageTable::insert_run(std::size_t i, std::uint64_t first, const Run& r) {
  shifted_ += first_.size() - i;
  first_.insert(first_.begin() + static_cast<std::ptrdiff_t>(i), first);
  runs_.insert(runs_.begin() + static_cast<std::ptrdiff_t>(i), r);
}

void PageTable::insert_runs(const std::vector<std::uint64_t>& firsts,
                            const std::vector<Run>& runs) {
  if (firsts.empty()) return;
  const auto at = static_cast<std::size_t>(
      std::lower_bound(first_.begin(), first_.end(), firsts.front()) - first_.begin());
  shifted_ += first_.size() - at;
  const auto pos = static_cast<std::ptrdiff_t>(at);
  first_.insert(first_.begin() + pos, firsts.begin(), firsts.end());
  runs_.insert(runs_.begin() + pos, runs.begin(), runs.end());
  join_next(at + runs.size() - 1);
  if (at > 0) join_next(at - 1);
}

void PageTable::erase_runs(std::size_t i, std::size_t n) {
  if (n == 0) return;
  shifted_ += first_.size() - i - n;
  const auto at = static_cast<std::ptrdiff_t>(i), end = static_cast<std::ptrdiff_t>(i + n);
  first_.erase(first_.begin() + at, first_.begin() + end);
  runs_.erase(runs_.begin() + at, runs_.begin() + end);
}

std::size_t PageTable::isolate(std::size_t i, std::uint64_t page) {
  const std::uint64_t first = first_[i];
  const Run r = runs_[i];
  const std::uint64_t before = page - first, after = r.count - before - 1;
  if (after > 0) {
    Run tail{after, r.base};
    tail.base.frame += before + 1;
    insert_run(i + 1, page + 1, tail);
  }
  if (before > 0) {
    runs_[i].count = before;
    Run one{1, r.base};
    one.base.frame += before;
    insert_run(i + 1, page, one);
    return i + 1;
  }
  runs_[i].count = 1;
  return i;
}

void PageTable::join_next(std::size_t i) {
  if (i + 1 >= first_.size() || !continues(i, first_[i + 1], runs_[i + 1].base)) return;
  runs_[i].count += runs_[i + 1].count;
  erase_runs(i + 1, 1);
}

void PageTable::map(std::uint64_t page, const Pte& pte) {
  // The common case first: the next page of the last run (a buffer mapped in order).
  if (!first_.empty() && continues(first_.size() - 1, page, pte)) {
    ++runs_.back().count;
    ++pages_;
    return;
  }
  // `at`: the first run beginning after the page; the run before it may hold the page.
  const auto at = static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), page) -
                                           first_.begin());
  const bool mapped = at > 0 && page - first_[at - 1] < runs_[at - 1].count;
  if (mapped) {
    Run& r = runs_[at - 1];
    Pte now = r.base;
    now.frame += page - first_[at - 1];
    if (same_but_frame(now, pte) && now.frame == pte.frame) return;  // no change
    // Remapping a run's first page in order, where it continues the run before: the page
    // moves from one run to the other (no run inserted).
    if (page == first_[at - 1] && r.count > 1 && at > 1 && continues(at - 2, page, pte)) {
      ++runs_[at - 2].count;
      ++first_[at - 1];
      --r.count;
      ++r.base.frame;
      return;
    }
    std::size_t i = isolate(at - 1, page);
    runs_[i].base = pte;
    join_next(i);
    if (i > 0) join_next(i - 1);
    return;
  }
  ++pages_;
  // Not mapped: extend the run before (mapping forwards) or the run after (backwards).
  if (at > 0 && continues(at - 1, page, pte)) {
    ++runs_[at - 1].count;
    join_next(at - 1);
    return;
  }
  if (at < first_.size() && first_[at] == page + 1 && same_but_frame(runs_[at].base, pte) &&
      runs_[at].base.frame == pte.frame + 1) {
    --first_[at];
    ++runs_[at].count;
    --runs_[at].base.frame;
    return;  // the run before does not continue into it: it did not continue the page
  }
  insert_run(at, page, Run{1, pte});
}

void PageTable::map_contiguous(std::uint64_t first, std::uint64_t count, const Pte& base) {
  if (count == 0) return;
  unmap(first, count);
  pages_ += count;
  const auto at = static_cast<std::size_t>(std::lower_bound(first_.begin(), first_.end(), first) -
                                           first_.begin());
  insert_run(at, first, Run{count, base});
  join_next(at);
  if (at > 0) join_next(at - 1);
}

void PageTable::unmap(std::uint64_t page) {
  std::size_t i = run_of(page);
  if (i == kNone) return;
  --pages_;
  Run& r = runs_[i];
  if (r.count == 1) {
    erase_runs(i, 1);
  } else if (page == first_[i]) {  // unmapping in order: the run shrinks from its front
    ++first_[i];
    --r.count;
    ++r.base.frame;
  } else if (page == first_[i] + r.count - 1) {  // or from its back
    --r.count;
  } else {
    erase_runs(isolate(i, page), 1);
  }
}

std::pair<std::size_t, std::size_t> PageTable::overlapping(std::uint64_t first,
                                                           std::uint64_t end) const {
  auto lo = static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), first) -
                                     first_.begin());
  if (lo > 0 && first_[lo - 1] + runs_[lo - 1].count > first) --lo;
  const auto hi = static_cast<std::size_t>(std::lower_bound(first_.begin(), first_.end(), end) -
                                           first_.begin());
  return {lo, hi};
}

void PageTable::unmap(std::uint64_t first, std::uint64_t count) {
  if (count == 0) return;
  const std::uint64_t end = first + count;
  const auto [lo, hi] = overlapping(first, end);
  if (lo >= hi) return;
  // A single run reaching beyond both ends: split it around the range.
  if (hi - lo == 1 && first_[lo] < first && first_[lo] + runs_[lo].count > end) {
    const Run r = runs_[lo];
    const std::uint64_t before = first - first_[lo];
    Run tail{r.count - before - count, r.base};
    tail.base.frame += before + count;
    runs_[lo].count = before;
    insert_run(lo + 1, end, tail);
    pages_ -= count;
    return;
  }
  std::size_t erase_from = lo, erase_to = hi;
  if (first_[lo] < first) {  // keeps its part before the range
    const std::uint64_t keep = first - first_[lo];
    pages_ -= runs_[lo].count - keep;
    runs_[lo].count = keep;
    ++erase_from;
  }
  const std::size_t last = hi - 1;
  if (last >= erase_from && first_[last] + runs_[last].count > end) {  // keeps its part after
    const std::uint64_t drop = end - first_[last];
    pages_ -= drop;
    first_[last] = end;
    runs_[last].count -= drop;
    runs_[last].base.frame += drop;
    erase_to = last;
  }
  for (std::size_t k = erase_from; k < erase_to; ++k)
    pages_ -= runs_[k].count;
  erase_runs(erase_from, erase_to - erase_from);
}

bool PageTable::any_mapped(std::uint64_t first, std::uint64_t count) const {
  if (count == 0) return false;
  const auto it = std::upper_bound(first_.begin(), first_.end(), first + count - 1);
  if (it == first_.begin()) return false;
  const auto i = static_cast<std::size_t>(it - first_.begin()) - 1;  // last run starting in/before
  return first_[i] + runs_[i].count > first;
}

}  // namespace podsim
