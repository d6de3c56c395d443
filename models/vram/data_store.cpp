#include "models/vram/data_store.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

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
  // Once pages are kept (erase_page): the lines first held by this write, noted per page as
  // the write leaves it (a store rarely spans more than one page).
  std::uint64_t page = UINT64_MAX, fresh_lines = 0;
  while (n > 0) {
    const std::uint64_t key = pa >> kLineShift, off = pa & (kLine - 1);
    const std::size_t chunk = std::min<std::size_t>(n, kLine - off);
    auto [it, fresh] = index_.try_emplace(key, 0);
    if (fresh) {
      it->second = new_line();
      if (chunk != kLine) line(it->second).fill(0);
      if (by_page_) {
        if (page_of(key) != page) {
          if (fresh_lines != 0) pages_[page] |= fresh_lines;
          page = page_of(key);
          fresh_lines = 0;
        }
        fresh_lines |= bit_in_page(key);
      }
    }
    std::memcpy(line(it->second).data() + off, in, chunk);
    in += chunk;
    pa += chunk;
    n -= chunk;
  }
  if (fresh_lines != 0) pages_[page] |= fresh_lines;
}

void VramDataStore::erase_page(std::uint64_t page) {
  if (!by_page_) {
    if (index_.empty()) return;
    for (const auto& held : index_)
      pages_[page_of(held.first)] |= bit_in_page(held.first);
    by_page_ = true;
  }
  const auto p = pages_.find(page);
  if (p == pages_.end()) return;
  const std::uint64_t first = page << (kPageShift - kLineShift);
  for (std::uint64_t held = p->second; held != 0; held &= held - 1) {
    const auto it = index_.find(first + static_cast<unsigned>(__builtin_ctzll(held)));
    if (it == index_.end()) throw std::logic_error("VramDataStore: a page's line is not held");
    free_.push_back(it->second);
    index_.erase(it);
  }
  pages_.erase(p);
}

void VramDataStore::clear() {
  index_.clear();
  pages_.clear();
  by_page_ = false;
  release();
  free_.clear();
  used_ = 0;
}

}  // namespace podsim
