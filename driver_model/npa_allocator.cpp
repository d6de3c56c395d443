#include "driver_model/npa_allocator.hpp"

#include <boost/icl/interval_set.hpp>
#include <boost/icl/right_open_interval.hpp>
#include <stdexcept>
#include <string>

namespace podsim::driver {

// Free pages as right-open intervals [start, end); the set merges touching ones itself. The
// pages a reservation covers (`blocked`), and those of them that are free but may not be
// given out (`reserved`): a range given out and freed inside a reservation lands there.
struct NpaRangeAllocator::Free {
  using Interval = boost::icl::right_open_interval<std::uint64_t>;
  using Set = boost::icl::interval_set<std::uint64_t, std::less, Interval>;
  Set set;
  Set blocked;
  Set reserved;
};

NpaRangeAllocator::NpaRangeAllocator(std::uint64_t first, std::uint64_t end)
    : free_(std::make_unique<Free>()) {
  if (end > first) {
    free_->set += Free::Interval(first, end);
    free_pages_ = end - first;
  }
}

NpaRangeAllocator::~NpaRangeAllocator() = default;
NpaRangeAllocator::NpaRangeAllocator(NpaRangeAllocator&&) noexcept = default;
NpaRangeAllocator& NpaRangeAllocator::operator=(NpaRangeAllocator&&) noexcept = default;

std::optional<std::uint64_t> NpaRangeAllocator::allocate(std::uint64_t pages) {
  if (pages == 0) return std::nullopt;
  const std::uint64_t align = pages >= kLargeAlign ? kLargeAlign : 1;
  for (const Free::Interval& iv : free_->set) {
    const std::uint64_t aligned = (iv.lower() + align - 1) / align * align;
    if (aligned + pages > iv.upper()) continue;
    free_->set -= Free::Interval(aligned, aligned + pages);
    allocated_.emplace(aligned, pages);
    free_pages_ -= pages;
    return aligned;
  }
  return std::nullopt;
}

void NpaRangeAllocator::free(std::uint64_t start, std::uint64_t pages) {
  auto a = allocated_.find(start);
  if (a == allocated_.end() || a->second != pages)
    throw std::logic_error("NPA range at page " + std::to_string(start) + " (" +
                           std::to_string(pages) + " pages) was not allocated");
  allocated_.erase(a);
  // Under a reservation: not given out again.
  const Free::Set kept = free_->blocked & Free::Interval(start, start + pages);
  Free::Set back;
  back += Free::Interval(start, start + pages);
  back -= kept;
  free_->reserved += kept;
  free_->set += back;
  free_pages_ += boost::icl::cardinality(back);
}

void NpaRangeAllocator::reserve(std::uint64_t start, std::uint64_t pages) {
  free_->blocked += Free::Interval(start, start + pages);
  Free::Set taken = free_->set & Free::Interval(start, start + pages);
  free_->set -= taken;
  free_->reserved += taken;
  free_pages_ -= boost::icl::cardinality(taken);
}

void NpaRangeAllocator::unreserve(std::uint64_t start, std::uint64_t pages) {
  free_->blocked -= Free::Interval(start, start + pages);
  Free::Set back = free_->reserved & Free::Interval(start, start + pages);
  free_->reserved -= back;
  free_->set += back;
  free_pages_ += boost::icl::cardinality(back);
}

void NpaRangeAllocator::digest(Digest& d) const {
  for (const Free::Interval& iv : free_->set)
    d.add(iv.lower()).add(iv.upper() - iv.lower());
  d.add(allocated_.size());
  for (const auto& [start, len] : allocated_)
    d.add(start).add(len);
  for (const Free::Interval& iv : free_->reserved)
    d.add(iv.lower()).add(iv.upper() - iv.lower());
}

}  // namespace podsim::driver
