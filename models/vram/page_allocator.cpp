#include "models/vram/page_allocator.hpp"

#include <algorithm>
#include <bit>
#include <boost/icl/interval_map.hpp>
#include <boost/icl/interval_set.hpp>
#include <boost/icl/right_open_interval.hpp>
#include <stdexcept>
#include <string>

namespace podsim {

// Clean pages as right-open intervals [start, end); the set merges touching ones itself.
struct VramPageAllocator::Free {
  using Interval = boost::icl::right_open_interval<std::uint64_t>;
  boost::icl::interval_set<std::uint64_t, std::less, Interval> set;
};

struct VramPageAllocator::Pins {
  using Interval = boost::icl::right_open_interval<std::uint64_t>;
  // Counts add up where intervals overlap; a count falling to 0 leaves the map.
  boost::icl::interval_map<std::uint64_t, std::uint32_t, boost::icl::partial_absorber, std::less,
                           boost::icl::inplace_plus, boost::icl::inter_section, Interval>
      map;
  // fn(first, end) for each run of consecutive pages in `pages`, in the order given.
  template <class Fn>
  static void runs(std::span<const std::uint64_t> pages, Fn&& fn) {
    for (std::size_t i = 0; i < pages.size();) {
      std::size_t j = i + 1;
      while (j < pages.size() && pages[j] == pages[j - 1] + 1)
        ++j;
      fn(pages[i], pages[j - 1] + 1);
      i = j;
    }
  }
  // Pages of [first, end) pinned at least once.
  std::uint64_t pinned_in(std::uint64_t first, std::uint64_t end) const {
    std::uint64_t n = 0;
    const Interval iv(first, end);
    for (auto it = map.lower_bound(iv); it != map.end() && it->first.lower() < end; ++it)
      n += std::min(end, it->first.upper()) - std::max(first, it->first.lower());
    return n;
  }
};

VramPageAllocator::VramPageAllocator(std::uint64_t pages, Policy policy, std::uint64_t scatter_run,
                                     bool clear_on_free, Rng rng)
    : total_(pages),
      policy_(policy),
      scatter_run_(std::max<std::uint64_t>(1, scatter_run)),
      clear_on_free_(clear_on_free),
      rng_(rng),
      clean_(pages),
      free_(std::make_unique<Free>()),
      pins_(std::make_unique<Pins>()) {
  if (pages) free_->set += Free::Interval(0, pages);
}

VramPageAllocator::~VramPageAllocator() = default;
VramPageAllocator::VramPageAllocator(VramPageAllocator&&) noexcept = default;
VramPageAllocator& VramPageAllocator::operator=(VramPageAllocator&&) noexcept = default;

void VramPageAllocator::take(std::uint64_t start, std::uint64_t n,
                             std::vector<std::uint64_t>& out) {
  for (std::uint64_t i = 0; i < n; ++i)
    out.push_back(start + i);
  free_->set -= Free::Interval(start, start + n);
  clean_ -= n;
}

std::optional<std::vector<std::uint64_t>> VramPageAllocator::allocate(std::uint64_t n) {
  if (n > clean_) return std::nullopt;
  std::vector<std::uint64_t> out;
  out.reserve(n);
  auto& set = free_->set;
  while (out.size() < n) {
    const std::uint64_t need = n - out.size();
    if (policy_ == Policy::FirstFit) {
      const Free::Interval first = *set.begin();
      take(first.lower(), std::min(first.upper() - first.lower(), need), out);
      continue;
    }
    if (policy_ == Policy::Blocks) {
      // The largest block that fits what is left, up to the block size; smaller ones where
      // VRAM has no free block that big (a single page always fits: n <= clean_).
      std::uint64_t b = std::min(std::bit_floor(need), std::bit_floor(scatter_run_));
      std::optional<std::uint64_t> at;
      while (!(at = free_block(b)))
        b /= 2;
      take(*at, b, out);
      continue;
    }
    // Scattered: a run of about scatter_run pages from a random free page (or, if that page
    // is not free, from the start of the next free extent, wrapping around).
    const std::uint64_t run = 1 + rng_.below(2 * scatter_run_ - 1);
    std::uint64_t at = rng_.below(total_);
    auto it = set.find(at);  // the extent holding `at`
    if (it == set.end()) {
      it = set.lower_bound(Free::Interval(at, at + 1));  // the next one
      if (it == set.end()) it = set.begin();
      at = it->lower();
    }
    take(at, std::min({it->upper() - at, need, run}), out);
  }
  return out;
}

std::optional<std::uint64_t> VramPageAllocator::free_block(std::uint64_t b) {
  auto& set = free_->set;
  if (set.empty() || b == 0 || total_ < b) return std::nullopt;
  const std::uint64_t from = rng_.below(total_ / b) * b;
  // The first extent at or after `from` that holds an aligned block, wrapping around once.
  auto fits = [b](const Free::Interval& e) -> std::optional<std::uint64_t> {
    const std::uint64_t s = (e.lower() + b - 1) / b * b;
    if (s + b <= e.upper()) return s;
    return std::nullopt;
  };
  auto it =
      set.lower_bound(Free::Interval(from, from + 1));  // the extent holding `from`, or the next
  if (it != set.end() && it->lower() <= from && from + b <= it->upper()) return from;
  for (auto i = it; i != set.end(); ++i)
    if (auto s = fits(*i)) return s;
  for (auto i = set.begin(); i != it; ++i)
    if (auto s = fits(*i)) return s;
  return std::nullopt;
}

void VramPageAllocator::insert_free(std::uint64_t start, std::uint64_t len) {
  const Free::Interval pages(start, start + len);
  if (boost::icl::intersects(free_->set, pages))
    throw std::logic_error("VRAM page " + std::to_string(start) + " freed twice");
  free_->set += pages;
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
  Pins::runs(pages, [&](std::uint64_t first, std::uint64_t end) {
    pinned_ += (end - first) - pins_->pinned_in(first, end);
    pins_->map += std::make_pair(Pins::Interval(first, end), std::uint32_t{1});
  });
}

void VramPageAllocator::unpin(std::span<const std::uint64_t> pages) {
  // Every page checked before any is unpinned (a page given twice must be pinned twice).
  // Pages in a row, each given once (a buffer's), are checked together: one walk over the
  // pins they lie in rather than a search a page.
  std::vector<std::uint64_t> sorted(pages.begin(), pages.end());
  if (!std::is_sorted(sorted.begin(), sorted.end())) std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  auto once = [&](std::size_t k) {
    return (k == 0 || sorted[k - 1] != sorted[k]) && (k + 1 == n || sorted[k + 1] != sorted[k]);
  };
  for (std::size_t i = 0; i < n;) {
    std::size_t j = i + 1;
    if (once(i))
      while (j < n && sorted[j] == sorted[j - 1] + 1 && once(j))
        ++j;
    const std::uint64_t first = sorted[i], end = sorted[j - 1] + 1;
    if (j - i > 1 && pins_->pinned_in(first, end) == end - first) {
      i = j;
      continue;
    }
    // One page (given once or more), or a row with a page not pinned: page by page.
    std::size_t k = i;
    while (k < j) {
      std::size_t m = k;
      while (m < n && sorted[m] == sorted[k])
        ++m;
      const auto it = pins_->map.find(sorted[k]);
      if (it == pins_->map.end() || it->second < m - k)
        throw std::logic_error("VRAM page " + std::to_string(sorted[k]) + " not pinned");
      k = m;
    }
    i = k;
  }
  Pins::runs(pages, [&](std::uint64_t first, std::uint64_t end) {
    pins_->map -= std::make_pair(Pins::Interval(first, end), std::uint32_t{1});
    pinned_ -= (end - first) - pins_->pinned_in(first, end);
  });
}

bool VramPageAllocator::is_pinned(std::uint64_t page) const {
  return pins_->map.find(page) != pins_->map.end();
}

bool VramPageAllocator::is_free(std::uint64_t page) const {
  return boost::icl::contains(free_->set, page);
}

void VramPageAllocator::digest(Digest& d) const {
  d.add(total_).add(clean_).add(rng_.state());
  for (const Free::Interval& iv : free_->set)
    d.add(iv.lower()).add(iv.upper() - iv.lower());
  d.add(dirty_.size());
  for (std::uint64_t p : dirty_)
    d.add(p);
  d.add(static_cast<std::size_t>(pinned_));  // page by page, as when it kept a count per page
  for (const auto& [iv, n] : pins_->map)
    for (std::uint64_t page = iv.lower(); page < iv.upper(); ++page)
      d.add(page).add(n);
}

}  // namespace podsim
