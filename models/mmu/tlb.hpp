// A set-associative TLB with LRU replacement, keyed by (address space, page number).
// Plain C++: GpuVm and NpaMmu give it time; tests drive it directly.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <vector>

namespace podsim {

template <class Value>
class Tlb {
 public:
  Tlb(std::uint32_t entries, std::uint32_t ways) : ways_(ways) {
    if (ways == 0 || entries == 0 || entries % ways != 0)
      throw std::invalid_argument("TLB entries must be a positive multiple of its ways");
    sets_ = entries / ways;
    lines_.resize(entries);
  }

  // A hit refreshes the line's LRU position.
  const Value* lookup(std::uint32_t space, std::uint64_t page) {
    Line* set = &lines_[set_of(page) * ways_];
    for (std::uint32_t w = 0; w < ways_; ++w) {
      Line& l = set[w];
      if (l.valid && l.page == page && l.space == space) {
        l.last_use = ++clock_;
        return &l.value;
      }
    }
    return nullptr;
  }

  // Fills (or refreshes) an entry, evicting the least recently used way of its set.
  void insert(std::uint32_t space, std::uint64_t page, const Value& v) {
    Line* set = &lines_[set_of(page) * ways_];
    Line* victim = &set[0];
    for (std::uint32_t w = 0; w < ways_; ++w) {
      Line& l = set[w];
      if (l.valid && l.page == page && l.space == space) {
        victim = &l;
        break;
      }
      if (!l.valid) {
        if (victim->valid) victim = &l;
      } else if (victim->valid && l.last_use < victim->last_use) {
        victim = &l;
      }
    }
    *victim = Line{true, space, page, ++clock_, v};
  }

  void invalidate_all() {
    for (Line& l : lines_)
      l.valid = false;
  }
  void invalidate_space(std::uint32_t space) {
    for (Line& l : lines_)
      if (l.space == space) l.valid = false;
  }
  void invalidate_range(std::uint32_t space, std::uint64_t first_page, std::uint64_t pages) {
    for (Line& l : lines_)
      if (l.space == space && l.page >= first_page && l.page - first_page < pages) l.valid = false;
  }

  std::uint32_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }

 private:
  struct Line {
    bool valid = false;
    std::uint32_t space = 0;
    std::uint64_t page = 0;
    std::uint64_t last_use = 0;
    Value value{};
  };
  std::uint64_t set_of(std::uint64_t page) const { return page % sets_; }

  std::uint32_t ways_;
  std::uint32_t sets_;
  std::vector<Line> lines_;
  std::uint64_t clock_ = 0;
};

}  // namespace podsim
