#include "models/mmu/page_table.hpp"

namespace podsim {

bool PageTable::continues(std::size_t i, std::uint64_t page, const Pte& p) const {
  const Run& r = runs_[i];
  const Pte& b = r.base;
  return first_[i] + r.count == page && b.target == p.target && b.writable == p.writable &&
         b.retry == p.retry && b.fragment == p.fragment && b.tag == p.tag &&
         b.frame + r.count == p.frame;
}

std::size_t PageTable::isolate(std::size_t i, std::uint64_t page) {
  const std::uint64_t first = first_[i];
  const Run r = runs_[i];
  const std::uint64_t before = page - first, after = r.count - before - 1;
  const auto at = static_cast<std::ptrdiff_t>(i);
  if (after > 0) {
    Run tail{after, r.base};
    tail.base.frame += before + 1;
    first_.insert(first_.begin() + at + 1, page + 1);
    runs_.insert(runs_.begin() + at + 1, tail);
  }
  if (before > 0) {
    runs_[i].count = before;
    Run one{1, r.base};
    one.base.frame += before;
    first_.insert(first_.begin() + at + 1, page);
    runs_.insert(runs_.begin() + at + 1, one);
    return i + 1;
  }
  runs_[i].count = 1;
  return i;
}

void PageTable::join_next(std::size_t i) {
  if (i + 1 >= first_.size() || !continues(i, first_[i + 1], runs_[i + 1].base)) return;
  runs_[i].count += runs_[i + 1].count;
  first_.erase(first_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
}

void PageTable::map(std::uint64_t page, const Pte& pte) {
  // The common case first: the next page of the last run (a buffer mapped in order).
  if (!first_.empty() && continues(first_.size() - 1, page, pte)) {
    ++runs_.back().count;
    ++pages_;
    return;
  }
  std::size_t i = run_of(page);
  if (i != kNone) {
    i = isolate(i, page);
    runs_[i].base = pte;
  } else {
    const auto at = std::upper_bound(first_.begin(), first_.end(), page) - first_.begin();
    first_.insert(first_.begin() + at, page);
    runs_.insert(runs_.begin() + at, Run{1, pte});
    i = static_cast<std::size_t>(at);
    ++pages_;
  }
  join_next(i);
  if (i > 0) join_next(i - 1);
}

void PageTable::unmap(std::uint64_t page) {
  std::size_t i = run_of(page);
  if (i == kNone) return;
  i = isolate(i, page);
  first_.erase(first_.begin() + static_cast<std::ptrdiff_t>(i));
  runs_.erase(runs_.begin() + static_cast<std::ptrdiff_t>(i));
  --pages_;
}

}  // namespace podsim
