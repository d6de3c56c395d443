// The exporter's NPA range allocator (the driver's drm_mm, in 4 KiB pages). A window spans
// pages [first, end): in source-identification mode each importer's window starts after the
// 512 pages (2 MiB) kept for rings; in source-aliasing mode the one shared window starts at
// page 0x800 (8 MiB), as the driver's does, above the receive pages every sender's rings take
// at 2 MiB + (src << 13 | type << 12), pages [512, 1024) (higher with more than 256
// accelerators: alias_first_range_page in models/npa_mmu/npa_layout.hpp).
// Requests of 512 pages or more are aligned to 512 pages (2 MiB), so they can use 2 MiB
// fragments.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "sim/core/digest.hpp"

namespace podsim::driver {

class NpaRangeAllocator {
 public:
  static constexpr std::uint64_t kRingPages = 512;
  static constexpr std::uint64_t kLargeAlign = 512;

  NpaRangeAllocator(std::uint64_t first, std::uint64_t end);
  ~NpaRangeAllocator();
  NpaRangeAllocator(NpaRangeAllocator&&) noexcept;
  NpaRangeAllocator& operator=(NpaRangeAllocator&&) noexcept;
  // First page of a free range of `pages` pages (the lowest that fits), or nothing if none
  // fits.
  std::optional<std::uint64_t> allocate(std::uint64_t pages);
  // Returns a range allocate() gave out. Throws std::logic_error for a range it did not.
  void free(std::uint64_t start, std::uint64_t pages);
  std::uint64_t free_pages() const { return free_pages_; }
  std::uint64_t allocated_ranges() const { return allocated_.size(); }
  // The ranges given out: start -> length.
  const std::map<std::uint64_t, std::uint64_t>& allocated() const { return allocated_; }
  // Takes pages [start, start + pages) out of (or puts them back into) what allocate() may
  // hand out, whether free or not (a range given out there and freed later stays out): a
  // quarantine (Driver, after_reset).
  void reserve(std::uint64_t start, std::uint64_t pages);
  void unreserve(std::uint64_t start, std::uint64_t pages);
  // The free extents (each once, merged with its neighbours), then the ranges given out.
  void digest(Digest& d) const;

 private:
  struct Free;                  // the free and reserved pages: Boost.ICL interval sets (.cpp)
  std::unique_ptr<Free> free_;  // (kept out of this header: ICL is heavy to compile)
  std::map<std::uint64_t, std::uint64_t> allocated_;  // start -> length
  std::uint64_t free_pages_ = 0;
};

}  // namespace podsim::driver
