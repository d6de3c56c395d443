// VRAM page allocator (plain C++), 4 KiB pages.
//
// - First fit hands out the lowest free pages; scattered picks runs of about `scatter_run`
//   pages at random places, as on a device that has been running for a while, so a buffer's
//   pages are spread over VRAM; blocks hands out naturally aligned power-of-two blocks, the
//   largest that fit what is left of the request up to `scatter_run` pages (the block size),
//   each at a random place: what amdgpu's VRAM manager gets from the buddy allocator
//   (drm_buddy) on a device that has been running for a while.
// - Freed pages are dirty until the clearing engine has zeroed them (VRAM is handed out
//   zeroed); only clean pages can be allocated. Without clear-on-free they are clean at once.
// - Pages can be pinned (counted); freeing a pinned page is a bug.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "sim/core/digest.hpp"
#include "sim/core/rng.hpp"

namespace podsim {

class VramPageAllocator {
 public:
  enum class Policy : std::uint8_t { FirstFit, Scattered, Blocks };

  VramPageAllocator(std::uint64_t pages, Policy policy = Policy::FirstFit,
                    std::uint64_t scatter_run = 16, bool clear_on_free = false, Rng rng = Rng(1));
  ~VramPageAllocator();
  VramPageAllocator(VramPageAllocator&&) noexcept;
  VramPageAllocator& operator=(VramPageAllocator&&) noexcept;

  // `n` clean pages, or nothing if fewer than `n` are clean.
  std::optional<std::vector<std::uint64_t>> allocate(std::uint64_t n);
  // Freed pages become dirty (clear-on-free) or clean.
  void free(std::span<const std::uint64_t> pages);

  // The clearing engine's work: the oldest dirty page, and then its being clean.
  std::optional<std::uint64_t> next_dirty();
  void mark_clean(std::uint64_t page);

  void pin(std::span<const std::uint64_t> pages);
  void unpin(std::span<const std::uint64_t> pages);
  bool is_pinned(std::uint64_t page) const;
  std::uint64_t pinned_pages() const { return pinned_; }

  std::uint64_t total_pages() const { return total_; }
  std::uint64_t free_pages() const { return clean_ + dirty_.size(); }  // clean or being cleared
  std::uint64_t clean_pages() const { return clean_; }
  std::uint64_t dirty_pages() const { return dirty_.size(); }
  bool is_free(std::uint64_t page) const;  // clean
  // Everything that decides what it hands out next: free extents, dirty pages, pins, RNG.
  void digest(Digest& d) const;

 private:
  void insert_free(std::uint64_t start, std::uint64_t len);
  // The first page of a free, aligned block of `b` pages (a power of two), searched from a
  // random place on; nothing if there is none.
  std::optional<std::uint64_t> free_block(std::uint64_t b);
  // Takes `n` pages from `start` on (all free) into `out`.
  void take(std::uint64_t start, std::uint64_t n, std::vector<std::uint64_t>& out);

  std::uint64_t total_;
  Policy policy_;
  std::uint64_t scatter_run_;
  bool clear_on_free_;
  Rng rng_;
  std::uint64_t clean_;
  struct Free;                  // clean pages: a Boost.ICL interval set (in the .cpp; ICL is
  std::unique_ptr<Free> free_;  // heavy to compile)
  std::deque<std::uint64_t> dirty_;
  struct Pins;  // pin counts by page: a Boost.ICL interval map (runs of pages pinned alike
  std::unique_ptr<Pins> pins_;  // are one entry: memory follows the runs, not the pages)
  std::uint64_t pinned_ = 0;    // pages pinned at least once
};

}  // namespace podsim
