#include "driver_model/npa_allocator.hpp"

#include <iterator>
#include <stdexcept>
#include <string>

namespace podsim::driver {

NpaRangeAllocator::NpaRangeAllocator(std::uint64_t first, std::uint64_t end) {
  if (end > first) {
    free_.emplace(first, end - first);
    free_pages_ = end - first;
  }
}

std::optional<std::uint64_t> NpaRangeAllocator::allocate(std::uint64_t pages) {
  if (pages == 0) return std::nullopt;
  const std::uint64_t align = pages >= kLargeAlign ? kLargeAlign : 1;
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const std::uint64_t start = it->first, len = it->second;
    const std::uint64_t aligned = (start + align - 1) / align * align;
    if (aligned - start + pages > len) continue;
    free_.erase(it);
    if (aligned > start) free_.emplace(start, aligned - start);
    const std::uint64_t tail = start + len - (aligned + pages);
    if (tail) free_.emplace(aligned + pages, tail);
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
  free_pages_ += pages;
  std::uint64_t s = start, len = pages;
  auto next = free_.lower_bound(s);
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == s) {
      s = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && s + len == next->first) {
    len += next->second;
    free_.erase(next);
  }
  free_.emplace(s, len);
}

}  // namespace podsim::driver
