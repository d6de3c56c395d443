// VRAM page allocator (plain C++): hands out 4 KiB pages from free extents, first fit, so a
// buffer's pages may be scattered once the device has been running for a while.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

namespace podsim {

class VramPageAllocator {
 public:
  explicit VramPageAllocator(std::uint64_t pages);

  // `n` pages (not necessarily contiguous), or nothing if fewer than `n` are free.
  std::optional<std::vector<std::uint64_t>> allocate(std::uint64_t n);
  void free(std::span<const std::uint64_t> pages);

  std::uint64_t total_pages() const { return total_; }
  std::uint64_t free_pages() const { return free_count_; }
  bool is_free(std::uint64_t page) const;

 private:
  void insert_free(std::uint64_t start, std::uint64_t len);
  std::uint64_t total_;
  std::uint64_t free_count_;
  std::map<std::uint64_t, std::uint64_t> free_;  // start page -> length
};

}  // namespace podsim
