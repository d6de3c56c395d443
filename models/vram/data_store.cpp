#include "models/vram/data_store.hpp"

#include <algorithm>
#include <cstring>

namespace podsim {

std::uint32_t VramDataStore::new_line() {
  if (!free_.empty()) {
    const std::uint32_t i = free_.back();
    free_.pop_back();
    return i;
  }
  if ((used_ >> kChunkShift) == chunks_.size()) {
    chunks_.reserve(chunks_.size() + 1);  // nothing to give back if this throws
    chunks_.push_back(static_cast<Line*>(huge_allocate(kChunkBytes)));
  }
  return used_++;
}

void VramDataStore::release() {
  for (Line* c : chunks_)
    huge_deallocate(c, kChunkBytes);
  chunks_.clear();
}

void VramDataStore::read(std::uint64_t pa, unsigned char* out, std::size_t n) const {
  while (n > 0) {
    const std::uint64_t key = pa >> kLineShift, off = pa & (kLine - 1);
    const std::size_t chunk = std::min<std::size_t>(n, kLine - off);
    auto it = index_.find(key);
    if (it == index_.end())
      std::memset(out, 0, chunk);
    else
      std::memcpy(out, line(it->second).data() + off, chunk);
    out += chunk;
    pa += chunk;
    n -= chunk;
  }
}

void VramDataStore::write(std::uint64_t pa, const unsigned char* in, std::size_t n) {
  while (n > 0) {
    const std::uint64_t key = pa >> kLineShift, off = pa & (kLine - 1);
    const std::size_t chunk = std::min<std::size_t>(n, kLine - off);
    auto [it, fresh] = index_.try_emplace(key, 0);
    if (fresh) {
      it->second = new_line();
      if (chunk != kLine) line(it->second).fill(0);
    }
    std::memcpy(line(it->second).data() + off, in, chunk);
    in += chunk;
    pa += chunk;
    n -= chunk;
  }
}

void VramDataStore::erase_page(std::uint64_t page) {
  if (index_.empty()) return;
  const std::uint64_t first = page << (kPageShift - kLineShift);
  for (std::uint64_t k = first; k < first + (kPageSize >> kLineShift); ++k) {
    auto it = index_.find(k);
    if (it == index_.end()) continue;
    free_.push_back(it->second);
    index_.erase(it);
  }
}

void VramDataStore::clear() {
  index_.clear();
  release();
  free_.clear();
  used_ = 0;
}

}  // namespace podsim
