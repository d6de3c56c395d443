// A set-associative TLB keyed by (address space, page), plain C++. An entry covers a fragment
// of 2^f pages (f = 0, 4 or 9); a lookup probes each size. Replacement is LRU, FIFO or random.
// 0 entries: no TLB (every lookup misses).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "sim/base/params.hpp"
#include "sim/base/rng.hpp"

namespace podsim {

enum class Replacement : std::uint8_t { Lru, Fifo, Random };
inline constexpr std::array<EnumName<Replacement>, 3> kReplacementNames{{
    {"lru", Replacement::Lru, "evict the least recently used way"},
    {"fifo", Replacement::Fifo, "evict the oldest filled way"},
    {"random", Replacement::Random, "evict a random way (seeded)"},
}};

template <class Value>
class Tlb {
 public:
  struct Hit {
    const Value* value;
    std::uint8_t fragment;
  };

  Tlb(std::uint32_t entries, std::uint32_t ways, Replacement policy = Replacement::Lru,
      Rng rng = Rng(1))
      : ways_(ways ? ways : 1), policy_(policy), rng_(rng) {
    if (entries != 0 && (ways == 0 || entries % ways != 0))
      throw std::invalid_argument("TLB entries must be a positive multiple of its ways");
    sets_ = entries ? entries / ways_ : 0;
    pow2_ = sets_ && (sets_ & (sets_ - 1)) == 0;
    tags_.assign(entries, 0);
    age_.assign(entries, 0);
    values_.resize(entries);
  }

  // Looks up the entry covering `page` (of any fragment size, the largest first); refreshes
  // its LRU position. Fragment sizes the TLB holds no entry of are not probed.
  Hit lookup(std::uint32_t space, std::uint64_t page) {
    if (sets_ == 0) return {nullptr, 0};
    for (std::size_t fi = 3; fi-- > 0;) {
      if (present_[fi] == 0) continue;
      const std::uint8_t f = kFragments[fi];
      const std::uint64_t key = page >> f;
      const std::uint64_t t = tag(space, f, key);
      const std::size_t base = set_of(key, f) * ways_;
      const std::uint64_t* set = &tags_[base];
      for (std::uint32_t w = 0; w < ways_; ++w) {
        if (set[w] == t) {
          if (policy_ == Replacement::Lru) age_[base + w] = ++clock_;
          return {&values_[base + w], f};
        }
      }
    }
    return {nullptr, 0};
  }

  // Fills the entry for the fragment of 2^fragment pages holding `page`: the line that holds
  // it already, else the set's first empty line, else the replacement policy's victim.
  void insert(std::uint32_t space, std::uint64_t page, std::uint8_t fragment, const Value& v) {
    if (sets_ == 0) return;
    const std::uint64_t key = page >> fragment;
    const std::uint64_t t = tag(space, fragment, key);
    const std::size_t base = set_of(key, fragment) * ways_;
    std::size_t match = SIZE_MAX, empty = SIZE_MAX, oldest = base;
    for (std::size_t i = base; i < base + ways_; ++i) {
      const std::uint64_t x = tags_[i];
      if (x == t) {
        match = i;
        break;
      }
      if (x == 0) {
        if (empty == SIZE_MAX) empty = i;
      } else if (age_[i] < age_[oldest]) {
        oldest = i;
      }
    }
    std::size_t victim = match != SIZE_MAX ? match : empty;
    if (victim == SIZE_MAX)
      victim = policy_ == Replacement::Random ? base + rng_.below(ways_) : oldest;
    ++clock_;
    if (tags_[victim]) --present_[fragment_index(tags_[victim])];
    ++present_[fragment_index(t)];
    tags_[victim] = t;
    age_[victim] = clock_;
    values_[victim] = v;
  }

  void invalidate_all() {
    std::fill(tags_.begin(), tags_.end(), 0);
    present_.fill(0);
  }
  void invalidate_space(std::uint32_t space) {
    for (std::uint64_t& t : tags_)
      if (t && space_of(t) == space) drop(t);
  }
  // Every entry of `space` overlapping pages [first, first + pages).
  void invalidate_range(std::uint32_t space, std::uint64_t first, std::uint64_t pages) {
    for (std::uint64_t& t : tags_) {
      if (!t || space_of(t) != space) continue;
      const std::uint8_t f = kFragments[fragment_index(t)];
      const std::uint64_t lo = (t >> kKeyShift) << f, hi = lo + (1ull << f);
      if (lo < first + pages && first < hi) drop(t);
    }
  }

  std::uint32_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }

 private:
  static constexpr std::array<std::uint8_t, 3> kFragments{0, 4, 9};  // by fragment index
  // A line's tag in one word, so a set's tags sit together (8 ways: one cache line): valid
  // (bit 0), fragment (bits 1-2: 0, 4 or 9), address space (bits 3-18), key (bits 19-63).
  // 0 is an empty line.
  static constexpr unsigned kKeyShift = 19;
  static std::uint64_t tag(std::uint32_t space, std::uint8_t f, std::uint64_t key) {
    if (space > 0xFFFF || key >> (64 - kKeyShift) || (f != 0 && f != 4 && f != 9))
      throw std::out_of_range("TLB: address space, page number or fragment out of range");
    const std::uint64_t fi = f == 0 ? 0 : f == 4 ? 1 : 2;
    return 1 | fi << 1 | static_cast<std::uint64_t>(space) << 3 | key << kKeyShift;
  }
  static std::uint32_t space_of(std::uint64_t t) { return (t >> 3) & 0xFFFF; }
  static std::size_t fragment_index(std::uint64_t t) { return (t >> 1) & 3; }
  void drop(std::uint64_t& t) {
    --present_[fragment_index(t)];
    t = 0;
  }
  std::uint64_t set_of(std::uint64_t key, std::uint8_t f) const {
    const std::uint64_t h = key ^ (static_cast<std::uint64_t>(f) << 20);
    return pow2_ ? h & (sets_ - 1) : h % sets_;
  }

  std::uint32_t ways_;
  std::uint32_t sets_ = 0;
  bool pow2_ = false;  // sets is a power of two: a mask picks the set
  Replacement policy_;
  Rng rng_;
  std::vector<std::uint64_t> tags_;  // what the lookup reads
  // When each line was last used (LRU) or filled (FIFO): the oldest is the victim.
  std::vector<std::uint64_t> age_;
  std::vector<Value> values_;
  std::array<std::uint32_t, 3> present_{};  // valid lines of each fragment size
  std::uint64_t clock_ = 0;
};

}  // namespace podsim
