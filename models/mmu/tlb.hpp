// A set-associative TLB keyed by (address space, page), plain C++. An entry covers a fragment
// of 2^f pages (f = 0, 4 or 9); a lookup probes each size. Replacement is LRU, FIFO or random.
// 0 entries: no TLB (every lookup misses).
#pragma once

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
    lines_.resize(entries);
  }

  // Looks up the entry covering `page` (of any fragment size); refreshes its LRU position.
  Hit lookup(std::uint32_t space, std::uint64_t page) {
    if (sets_ == 0) return {nullptr, 0};
    for (std::uint8_t f : kSizes) {
      const std::uint64_t key = page >> f;
      Line* set = &lines_[set_of(key, f) * ways_];
      for (std::uint32_t w = 0; w < ways_; ++w) {
        Line& l = set[w];
        if (l.valid && l.key == key && l.fragment == f && l.space == space) {
          l.last_use = ++clock_;
          return {&l.value, f};
        }
      }
    }
    return {nullptr, 0};
  }

  // Fills the entry for the fragment of 2^fragment pages holding `page`.
  void insert(std::uint32_t space, std::uint64_t page, std::uint8_t fragment, const Value& v) {
    if (sets_ == 0) return;
    const std::uint64_t key = page >> fragment;
    Line* set = &lines_[set_of(key, fragment) * ways_];
    Line* victim = nullptr;
    for (std::uint32_t w = 0; w < ways_ && !victim; ++w) {
      Line& l = set[w];
      if (l.valid && l.key == key && l.fragment == fragment && l.space == space) victim = &l;
    }
    for (std::uint32_t w = 0; w < ways_ && !victim; ++w)
      if (!set[w].valid) victim = &set[w];
    if (!victim) {
      switch (policy_) {
        case Replacement::Random: victim = &set[rng_.below(ways_)]; break;
        case Replacement::Lru:
        case Replacement::Fifo:
          victim = &set[0];
          for (std::uint32_t w = 1; w < ways_; ++w) {
            const auto age = [&](const Line& l) {
              return policy_ == Replacement::Lru ? l.last_use : l.filled;
            };
            if (age(set[w]) < age(*victim)) victim = &set[w];
          }
          break;
      }
    }
    ++clock_;
    *victim = Line{true, space, key, fragment, clock_, clock_, v};
  }

  void invalidate_all() {
    for (Line& l : lines_)
      l.valid = false;
  }
  void invalidate_space(std::uint32_t space) {
    for (Line& l : lines_)
      if (l.space == space) l.valid = false;
  }
  // Every entry of `space` overlapping pages [first, first + pages).
  void invalidate_range(std::uint32_t space, std::uint64_t first, std::uint64_t pages) {
    for (Line& l : lines_) {
      if (!l.valid || l.space != space) continue;
      const std::uint64_t lo = l.key << l.fragment, hi = lo + (1ull << l.fragment);
      if (lo < first + pages && first < hi) l.valid = false;
    }
  }

  std::uint32_t sets() const { return sets_; }
  std::uint32_t ways() const { return ways_; }

 private:
  static constexpr std::array<std::uint8_t, 3> kSizes{9, 4, 0};
  struct Line {
    bool valid = false;
    std::uint32_t space = 0;
    std::uint64_t key = 0;
    std::uint8_t fragment = 0;
    std::uint64_t last_use = 0;
    std::uint64_t filled = 0;
    Value value{};
  };
  std::uint64_t set_of(std::uint64_t key, std::uint8_t f) const {
    return (key ^ (static_cast<std::uint64_t>(f) << 20)) % sets_;
  }

  std::uint32_t ways_;
  std::uint32_t sets_ = 0;
  Replacement policy_;
  Rng rng_;
  std::vector<Line> lines_;
  std::uint64_t clock_ = 0;
};

}  // namespace podsim
