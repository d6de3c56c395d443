#include "models/vram/page_allocator.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <string>

namespace podsim {

VramPageAllocator::VramPageAllocator(std::uint64_t pages, Policy policy, std::uint64_t scatter_run,
                                     bool clear_on_free, Rng rng)
    : total_(pages),
      policy_(policy),
      scatter_run_(std::max<std::uint64_t>(1, scatter_run)),
      clear_on_free_(clear_on_free),
      rng_(rng),
      clean_(pages) {
  if (pages) free_.emplace(0, pages);
}

void VramPageAllocator::take(std::map<std::uint64_t, std::uint64_t>::iterator it, std::uint64_t n,
                             std::vector<std::uint64_t>& out) {
  const std::uint64_t start = it->first, len = it->second;
  for (std::uint64_t i = 0; i < n; ++i)
    out.push_back(start + i);
  free_.erase(it);
  if (len > n) free_.emplace(start + n, len - n);
  clean_ -= n;
}

std::optional<std::vector<std::uint64_t>> VramPageAllocator::allocate(std::uint64_t n) {
  if (n > clean_) return std::nullopt;
  std::vector<std::uint64_t> out;
  out.reserve(n);
  while (out.size() < n) {
    const std::uint64_t need = n - out.size();
    if (policy_ == Policy::FirstFit) {
      auto it = free_.begin();
      take(it, std::min(it->second, need), out);
      continue;
    }
    // Scattered: a run of about scatter_run pages at a random free page.
    const std::uint64_t run = 1 + rng_.below(2 * scatter_run_ - 1);
    std::uint64_t at = rng_.below(total_);
    auto it = free_.upper_bound(at);  // the extent holding `at`, or the next one
    if (it != free_.begin() && std::prev(it)->first + std::prev(it)->second > at) {
      --it;
    } else {
      if (it == free_.end()) it = free_.begin();
      at = it->first;
    }
    // Split off the pages before `at`, then take the run from its start.
    if (at > it->first) {
      const std::uint64_t start = it->first, len = it->second;
      it->second = at - start;
      it = free_.emplace(at, start + len - at).first;
    }
    take(it, std::min({it->second, need, run}), out);
  }
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
    if (is_pinned(p)) throw std::logic_error("VRAM page " + std::to_string(p) + " freed pinned");
    if (clear_on_free_) {
      dirty_.push_back(p);
    } else {
      insert_free(p, 1);
      ++clean_;
    }
  }
}

std::optional<std::uint64_t> VramPageAllocator::next_dirty() {
  if (dirty_.empty()) return std::nullopt;
  const std::uint64_t p = dirty_.front();
  dirty_.pop_front();
  return p;
}

void VramPageAllocator::mark_clean(std::uint64_t page) {
  insert_free(page, 1);
  ++clean_;
}

void VramPageAllocator::pin(std::span<const std::uint64_t> pages) {
  for (std::uint64_t p : pages)
    ++pins_[p];
}

void VramPageAllocator::unpin(std::span<const std::uint64_t> pages) {
  for (std::uint64_t p : pages) {
    auto it = pins_.find(p);
    if (it == pins_.end()) throw std::logic_error("VRAM page " + std::to_string(p) + " not pinned");
    if (--it->second == 0) pins_.erase(it);
  }
}

bool VramPageAllocator::is_free(std::uint64_t page) const {
  auto it = free_.upper_bound(page);
  if (it == free_.begin()) return false;
  --it;
  return page < it->first + it->second;
}

void VramPageAllocator::digest(Digest& d) const {
  d.add(total_).add(clean_).add(rng_.state());
  for (const auto& [start, len] : free_)
    d.add(start).add(len);
  d.add(dirty_.size());
  for (std::uint64_t p : dirty_)
    d.add(p);
  std::vector<std::pair<std::uint64_t, std::uint32_t>> pins(pins_.begin(), pins_.end());
  std::sort(pins.begin(), pins.end());
  d.add(pins.size());
  for (const auto& [page, n] : pins)
    d.add(page).add(n);
}

}  // namespace podsim
