#include "models/vram/page_allocator.hpp"

#include <iterator>
#include <stdexcept>
#include <string>

namespace podsim {

VramPageAllocator::VramPageAllocator(std::uint64_t pages) : total_(pages), free_count_(pages) {
  if (pages) free_.emplace(0, pages);
}

std::optional<std::vector<std::uint64_t>> VramPageAllocator::allocate(std::uint64_t n) {
  if (n > free_count_) return std::nullopt;
  std::vector<std::uint64_t> out;
  out.reserve(n);
  while (out.size() < n) {
    auto it = free_.begin();
    std::uint64_t take = std::min<std::uint64_t>(it->second, n - out.size());
    for (std::uint64_t i = 0; i < take; ++i)
      out.push_back(it->first + i);
    std::uint64_t start = it->first + take, len = it->second - take;
    free_.erase(it);
    if (len) free_.emplace(start, len);
  }
  free_count_ -= n;
  return out;
}

void VramPageAllocator::insert_free(std::uint64_t start, std::uint64_t len) {
  auto next = free_.lower_bound(start);
  if (next != free_.end() && next->first < start + len)
    throw std::logic_error("VRAM page " + std::to_string(start) + " freed twice");
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second > start)
      throw std::logic_error("VRAM page " + std::to_string(start) + " freed twice");
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      free_.erase(prev);
    }
  }
  if (next != free_.end() && start + len == next->first) {
    len += next->second;
    free_.erase(next);
  }
  free_.emplace(start, len);
}

void VramPageAllocator::free(std::span<const std::uint64_t> pages) {
  for (std::uint64_t p : pages) {
    if (p >= total_) throw std::logic_error("VRAM page " + std::to_string(p) + " out of range");
    insert_free(p, 1);
    ++free_count_;
  }
}

bool VramPageAllocator::is_free(std::uint64_t page) const {
  auto it = free_.upper_bound(page);
  if (it == free_.begin()) return false;
  --it;
  return page < it->first + it->second;
}

}  // namespace podsim
