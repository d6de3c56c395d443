// What VRAM holds, functionally: the bytes stores have written, kept per 64-byte line for the
// lines that were ever written (everything else reads as zero). A 1,024-GPU pod that writes a
// few hundred megabytes in scattered 64-256 B stores keeps about that much, not a 4 KiB page
// per store. Plain C++.
#pragma once

#include <array>
#include <boost/unordered/unordered_flat_map.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "models/mmu/pte.hpp"
#include "sim/core/huge_pages.hpp"

namespace podsim {

class VramDataStore {
 public:
  static constexpr unsigned kLineShift = 6;
  static constexpr std::uint64_t kLine = 1ull << kLineShift;

  void read(std::uint64_t pa, unsigned char* out, std::size_t n) const;
  void write(std::uint64_t pa, const unsigned char* in, std::size_t n);
  // Forgets 4 KiB page `page` (it reads as zero again).
  void erase_page(std::uint64_t page);
  void clear();
  // Lines held (written and not erased since).
  std::size_t lines() const { return index_.size(); }

 private:
  using Line = std::array<unsigned char, kLine>;
  // Lines live in chunks of 1,024 (64 KiB), which the GPUs' stores share huge pages for
  // (sim/core/huge_pages.hpp): a GPU that stores little holds little.
  static constexpr unsigned kChunkShift = 10;
  Line& line(std::uint32_t i) { return chunks_[i >> kChunkShift][i & ((1u << kChunkShift) - 1)]; }
  const Line& line(std::uint32_t i) const {
    return chunks_[i >> kChunkShift][i & ((1u << kChunkShift) - 1)];
  }
  std::uint32_t new_line();

  using Index =
      boost::unordered_flat_map<std::uint64_t, std::uint32_t, boost::hash<std::uint64_t>,
                                std::equal_to<std::uint64_t>,
                                HugePageAllocator<std::pair<const std::uint64_t, std::uint32_t>>>;
  Index index_;  // line address -> slot
  // Per 4 KiB page holding any line: which of its 64 lines (bit i: line i of the page), so
  // that forgetting a page visits the lines it holds, not all 64 (a freed buffer is cleared
  // page by page: pod-1024's teardown clears 262,144 pages holding a line or two each). Made
  // at the first erase_page that has lines to look for and kept from then on, so that stores
  // before it (a run's access phase, mostly) pay nothing for it.
  static_assert(kPageSize >> kLineShift == 64, "a page's lines fit one 64-bit mask");
  using PageLines =
      boost::unordered_flat_map<std::uint64_t, std::uint64_t, boost::hash<std::uint64_t>,
                                std::equal_to<std::uint64_t>,
                                HugePageAllocator<std::pair<const std::uint64_t, std::uint64_t>>>;
  PageLines pages_;
  bool by_page_ = false;  // pages_ is made and kept
  static std::uint64_t page_of(std::uint64_t line) { return line >> (kPageShift - kLineShift); }
  static std::uint64_t bit_in_page(std::uint64_t line) {
    return std::uint64_t{1} << (line & ((kPageSize >> kLineShift) - 1));
  }
  static constexpr std::size_t kChunkBytes = sizeof(Line) << kChunkShift;
  std::vector<Line*> chunks_;  // by chunk number: its first line
  void release();

 public:
  VramDataStore() = default;
  VramDataStore(const VramDataStore&) = delete;
  VramDataStore& operator=(const VramDataStore&) = delete;
  ~VramDataStore() { release(); }

 private:
  std::uint32_t used_ = 0;  // slots handed out from the chunks
  std::vector<std::uint32_t> free_;
};

}  // namespace podsim
