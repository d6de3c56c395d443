// A process's GPUVM page table (plain C++): 4 KiB pages of a GPU virtual address space, each
// pointing at a local VRAM page, at an NPA page (remote memory), or nothing.
#pragma once

#include <cstdint>
#include <unordered_map>

namespace podsim {

constexpr unsigned kPageShift = 12;
constexpr std::uint64_t kPageSize = 1ull << kPageShift;

enum class PteTarget : std::uint8_t { Invalid, Vram, Npa };

struct Pte {
  PteTarget target = PteTarget::Invalid;
  bool writable = false;
  std::uint64_t frame = 0;  // VRAM page number, or NPA page number (NPA byte address >> 12)
};

class GpuPageTable {
 public:
  void map(std::uint64_t va_page, const Pte& pte) { ptes_[va_page] = pte; }
  void unmap(std::uint64_t va_page) { ptes_.erase(va_page); }
  // The PTE for a page; an Invalid one when nothing is mapped there.
  Pte lookup(std::uint64_t va_page) const {
    auto it = ptes_.find(va_page);
    return it == ptes_.end() ? Pte{} : it->second;
  }
  std::size_t mapped_pages() const { return ptes_.size(); }

 private:
  std::unordered_map<std::uint64_t, Pte> ptes_;
};

}  // namespace podsim
