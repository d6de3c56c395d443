// A set-associative TLB keyed by (address space, page), plain C++. An entry covers a fragment
// of 2^f pages (f = 0 to 9: 4 KiB to 2 MiB); a lookup probes each size it holds entries of.
// Replacement is LRU, FIFO or random. 0 entries: no TLB (every lookup misses).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "models/mmu/pte.hpp"
#include "models/mmu/tag_scan.hpp"
#include "sim/core/params.hpp"
#include "sim/core/rng.hpp"

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
    // Rank bits: enough for ways - 1 (none for random replacement).
    if (policy_ != Replacement::Random)
      while ((1ull << rank_bits_) < ways_)
        ++rank_bits_;
    rank_mask_ = (1ull << rank_bits_) - 1;
    key_bits_ = 64 - rank_bits_ - kKeyShift;
    // The lines are allocated by the first insert: a TLB never filled (a GPU another rank
    // simulates, or one nothing reaches) holds no host memory. Until then every line is empty
    // and each set's ranks are 0, 1, ..., ways - 1, as allocate() leaves them.
  }

  // Looks up the entry covering `page` (of any fragment size, the largest first); refreshes
  // its LRU position. Fragment sizes the TLB holds no entry of are not probed.
  Hit lookup(std::uint32_t space, std::uint64_t page) {
    if (sets_ == 0 || space > 0xF) return {nullptr, 0};
    for (std::uint32_t sizes = present_mask_; sizes != 0;) {
      const auto f = static_cast<std::uint8_t>(31 - __builtin_clz(sizes));  // largest first
      sizes &= ~(1u << f);
      const std::uint64_t key = page >> f;
      if (key >> key_bits_) continue;  // beyond what a line holds: never filled (a fault)
      const std::uint64_t t = tag(space, f, key);
      const std::size_t base = set_of(key, f) * ways_;
      const std::uint64_t* set = &tags_[base];
      std::size_t w = 0;
      if (ways_ >= tag_scan::kWide) {
        w = tag_scan::find(set, ways_, t, ~rank_mask_);
      } else {
        while (w < ways_ && (set[w] & ~rank_mask_) != t)
          ++w;
      }
      if (w < ways_) {
        if (policy_ == Replacement::Lru) to_front(base, base + w);
        return {&values_[base + w], f};
      }
    }
    return {nullptr, 0};
  }

  // Fills the entry for the fragment of 2^fragment pages holding `page`: the line that holds
  // it already, else the set's first empty line, else the replacement policy's victim (LRU:
  // the least recently used way; FIFO: the least recently filled).
  void insert(std::uint32_t space, std::uint64_t page, std::uint8_t fragment, const Value& v) {
    if (sets_ == 0) return;
    if (tags_.empty()) [[unlikely]]
      allocate();
    const std::uint64_t key = page >> fragment;
    const std::uint64_t t = tag(space, fragment, key);
    const std::size_t base = set_of(key, fragment) * ways_;
    std::size_t match = SIZE_MAX, empty = SIZE_MAX, oldest = SIZE_MAX;
    if (ways_ >= tag_scan::kWide) {
      // The same three answers, each from a vector scan: the line holding the tag, the first
      // empty line, the line ranked last (with no empty line, every line is valid).
      const std::uint64_t* set = &tags_[base];
      auto at = [&](std::size_t w) { return w < ways_ ? base + w : SIZE_MAX; };
      match = at(tag_scan::find(set, ways_, t, ~rank_mask_));
      if (match == SIZE_MAX) empty = at(tag_scan::find(set, ways_, 0, 1ull << rank_bits_));
      if (match == SIZE_MAX && empty == SIZE_MAX)
        oldest = at(tag_scan::find(set, ways_, ways_ - 1u, rank_mask_));
    } else {
      for (std::size_t i = base; i < base + ways_; ++i) {
        const std::uint64_t x = tags_[i];
        if ((x & ~rank_mask_) == t) {
          match = i;
          break;
        }
        if (!valid(x)) {
          if (empty == SIZE_MAX) empty = i;
        } else if ((x & rank_mask_) == ways_ - 1u) {
          oldest = i;
        }
      }
    }
    std::size_t victim = match != SIZE_MAX ? match : empty;
    if (victim == SIZE_MAX)
      victim = policy_ == Replacement::Random ? base + rng_.below(ways_) : oldest;
    if (valid(tags_[victim])) forget(fragment_of(tags_[victim]));
    if (present_[fragment]++ == 0) present_mask_ |= 1u << fragment;
    tags_[victim] = t | (tags_[victim] & rank_mask_);
    if (rank_bits_) to_front(base, victim);
    values_[victim] = v;
  }

  void invalidate_all() {
    for (std::uint64_t& t : tags_)
      t &= rank_mask_;
    present_.fill(0);
    present_mask_ = 0;
  }
  void invalidate_space(std::uint32_t space) {
    for (std::uint64_t& t : tags_)
      if (valid(t) && space_of(t) == space) drop(t);
  }
  // Every entry of `space` overlapping pages [first, first + pages).
  void invalidate_range(std::uint32_t space, std::uint64_t first, std::uint64_t pages) {
    for (std::uint64_t& t : tags_) {
      if (!valid(t) || space_of(t) != space) continue;
      const std::uint8_t f = fragment_of(t);
      const std::uint64_t lo = (t >> (rank_bits_ + kKeyShift)) << f, hi = lo + (1ull << f);
      if (lo < first + pages && first < hi) drop(t);
    }
  }

  // Every line in set order: its tag word (with its replacement rank) and, when valid, its
  // value; `f(tag_word, const Value*)` gets null for an empty line.
  template <class F>
  void for_each_line(F&& f) const {
    if (tags_.empty()) {  // never filled: as allocate() would leave it
      for (std::size_t i = 0; i < std::size_t{sets_} * ways_; ++i)
        f(initial_tag(i), nullptr);
      return;
    }
    for (std::size_t i = 0; i < tags_.size(); ++i)
      f(tags_[i], valid(tags_[i]) ? &values_[i] : nullptr);
  }
  // Host bytes the lines hold (none until the first insert).
  std::size_t host_bytes() const {
    return tags_.capacity() * sizeof(std::uint64_t) + values_.capacity() * sizeof(Value);
  }

  std::uint32_t sets() const { return sets_; }
  std::uint64_t valid_entries() const {
    std::uint64_t n = 0;
    for (std::uint32_t c : present_)
      n += c;
    return n;
  }
  std::uint32_t ways() const { return ways_; }

 private:
  // A line in one word, so a set sits together (8 ways: one cache line) and its replacement
  // order with it: the line's rank in its set (low bits: 0 is the most recently used, or
  // filled, way; the ranks of a set are always 0 .. ways - 1), then valid (1 bit), fragment
  // (4 bits: 0 to 9), address space (4 bits: a VMID, 0 to 15), key (the rest: at 4,096 ways,
  // 43 bits, a 55-bit address's page). An empty line keeps its rank.
  static constexpr unsigned kKeyShift = 9;
  // An empty line `i`'s word before anything was filled: its rank in its set.
  std::uint64_t initial_tag(std::size_t i) const { return rank_bits_ ? i % ways_ : 0; }
  void allocate() {
    tags_.resize(std::size_t{sets_} * ways_);
    for (std::size_t i = 0; i < tags_.size(); ++i)
      tags_[i] = initial_tag(i);
    values_.resize(tags_.size());
  }
  std::uint64_t tag(std::uint32_t space, std::uint8_t f, std::uint64_t key) const {
    if (space > 0xF || key >> key_bits_ || f > kMaxFragment)
      throw std::out_of_range("TLB: address space, page number or fragment out of range");
    return (1ull | std::uint64_t{f} << 1 | static_cast<std::uint64_t>(space) << 5 |
            key << kKeyShift)
           << rank_bits_;
  }
  bool valid(std::uint64_t t) const { return (t >> rank_bits_) & 1; }
  std::uint32_t space_of(std::uint64_t t) const { return (t >> (rank_bits_ + 5)) & 0xF; }
  std::uint8_t fragment_of(std::uint64_t t) const { return (t >> (rank_bits_ + 1)) & 0xF; }
  void forget(std::uint8_t f) {
    if (--present_[f] == 0) present_mask_ &= ~(1u << f);
  }
  void drop(std::uint64_t& t) {
    forget(fragment_of(t));
    t &= rank_mask_;
  }
  // Line `i` becomes its set's most recent; the lines more recent than it move down one.
  void to_front(std::size_t base, std::size_t i) {
    const std::uint64_t r = tags_[i] & rank_mask_;
    if (r == 0) return;  // already the most recent
    if (ways_ >= tag_scan::kWide) {
      tag_scan::demote_below(&tags_[base], ways_, r, rank_mask_);
    } else {
      for (std::size_t w = base; w < base + ways_; ++w)
        if ((tags_[w] & rank_mask_) < r) ++tags_[w];
    }
    tags_[i] &= ~rank_mask_;
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
  unsigned rank_bits_ = 0, key_bits_ = 0;
  std::uint64_t rank_mask_ = 0;
  std::vector<std::uint64_t> tags_;  // what the lookup reads (and the replacement order)
  std::vector<Value> values_;
  std::array<std::uint32_t, kMaxFragment + 1> present_{};  // valid lines of each fragment size
  std::uint32_t present_mask_ = 0;                         // the sizes with any
};

}  // namespace podsim
