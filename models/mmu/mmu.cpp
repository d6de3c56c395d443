#include "models/mmu/mmu.hpp"

#include <algorithm>

namespace podsim {

void MmuCore::digest(Digest& d) const {
  for (const Tlb<Cached>* tlb : {&l1_, &l2_}) {
    d.add(tlb->valid_entries());
    tlb->for_each_line([&](std::uint64_t tag, const Cached* c) {
      d.add(tag);
      if (!c) return;
      d.add(static_cast<std::uint64_t>(c->pte.target))
          .add(c->pte.writable)
          .add(c->pte.retry)
          .add(c->pte.fragment)
          .add(c->pte.frame)
          .add(c->pte.tag)
          .add(static_cast<std::uint64_t>(c->ready.as_ps()));
    });
  }
  for (std::size_t i = 0; i < pwc_tags_.size(); ++i)
    d.add(pwc_tags_[i]).add(pwc_last_use_[i]);
  d.add(pwc_clock_);
  for (Time w : walker_free_)
    d.add(static_cast<std::uint64_t>(w.as_ps()));
}

MmuCore::MmuCore(const MmuConfig& cfg, Rng rng)
    : cfg_(cfg),
      l1_(cfg.l1.entries, cfg.l1.ways, cfg.l1.replacement, Rng(rng.next())),
      l2_(cfg.l2.entries, cfg.l2.ways, cfg.l2.replacement, Rng(rng.next())),
      pwc_tags_(cfg.pwc_entries, 0),
      pwc_last_use_(cfg.pwc_entries, 0),
      walker_free_(cfg.walkers) {
  // A TLB of no entries is no TLB: nothing is looked up, so no lookup time is spent.
  for (TlbConfig* tlb : {&cfg_.l1, &cfg_.l2})
    if (tlb->entries == 0) tlb->latency = Time{};
}

std::uint64_t MmuCore::pwc_tag(std::uint32_t space, std::uint32_t level, std::uint64_t prefix) {
  // valid (bit 0), level (bits 1-3), space (bits 4-19), prefix (bits 20-63)
  return 1 | static_cast<std::uint64_t>(level) << 1 |
         static_cast<std::uint64_t>(space & 0xFFFF) << 4 | prefix << 20;
}

// The deepest level whose entry the page-walk cache holds for `page` (levels count from the
// leaf, 0, to the root, walk_levels - 1); walk_levels when it holds none.
std::uint32_t MmuCore::pwc_deepest(std::uint32_t space, std::uint64_t page) {
  std::uint64_t want[8];
  for (std::uint32_t level = 0; level < cfg_.walk_levels; ++level)
    want[level] = pwc_tag(space, level, page >> (kRadixBits * level));
  std::uint32_t best = cfg_.walk_levels;
  std::size_t hit = SIZE_MAX;
  for (std::size_t i = 0; i < pwc_tags_.size(); ++i) {
    const std::uint64_t t = pwc_tags_[i];
    const auto level = static_cast<std::uint32_t>((t >> 1) & 7);
    if (t && level < best && t == want[level]) {
      best = level;
      hit = i;
    }
  }
  if (hit != SIZE_MAX) pwc_last_use_[hit] = ++pwc_clock_;
  return best;
}

// Caches the upper-level entries a walk read (levels above the leaf), the lowest level
// first: each in the line that already holds it, else the first empty line, else the least
// recently used.
void MmuCore::pwc_fill(std::uint32_t space, std::uint64_t page, std::uint32_t leaf_level) {
  if (pwc_tags_.empty()) return;
  // One pass finds the lines already holding these levels (usually all but the lowest).
  std::uint64_t want[8];
  std::size_t holder[8];
  for (std::uint32_t level = leaf_level + 1; level < cfg_.walk_levels; ++level) {
    want[level] = pwc_tag(space, level, page >> (kRadixBits * level));
    holder[level] = SIZE_MAX;
  }
  for (std::size_t i = 0; i < pwc_tags_.size(); ++i) {
    const std::uint64_t t = pwc_tags_[i];
    const auto level = static_cast<std::uint32_t>((t >> 1) & 7);
    if (t && level > leaf_level && level < cfg_.walk_levels && t == want[level] &&
        holder[level] == SIZE_MAX)
      holder[level] = i;
  }
  for (std::uint32_t level = leaf_level + 1; level < cfg_.walk_levels; ++level) {
    std::size_t victim = holder[level];
    if (victim == SIZE_MAX) {
      std::size_t empty = SIZE_MAX, oldest = 0;
      for (std::size_t i = 0; i < pwc_tags_.size(); ++i) {
        if (!pwc_tags_[i]) {
          if (empty == SIZE_MAX) empty = i;
        } else if (pwc_last_use_[i] < pwc_last_use_[oldest] || !pwc_tags_[oldest]) {
          oldest = i;
        }
      }
      victim = empty != SIZE_MAX ? empty : oldest;
      // A line taken for this level may have held a higher level this walk also fills.
      for (std::uint32_t up = level + 1; up < cfg_.walk_levels; ++up)
        if (holder[up] == victim) holder[up] = SIZE_MAX;
    }
    pwc_tags_[victim] = want[level];
    pwc_last_use_[victim] = ++pwc_clock_;
  }
}

MmuCore::Outcome MmuCore::translate(std::uint32_t space, std::uint64_t page, Time now,
                                    const PageTable* table) {
  Outcome out;
  auto resolve = [&](const Pte& base, std::uint8_t f) {
    Pte p = base;
    p.frame = base.frame + (page & ((1ull << f) - 1));
    return p;
  };
  Time t = now + cfg_.l1.latency;
  if (auto h = l1_.lookup(space, page); h.value) {
    out.l1_hit = true;
    out.pte = resolve(h.value->pte, h.fragment);
    out.done = std::max(t, h.value->ready);
    return out;
  }
  t += cfg_.l2.latency;
  if (auto h = l2_.lookup(space, page); h.value) {
    out.l2_hit = true;
    out.pte = resolve(h.value->pte, h.fragment);
    out.done = std::max(t, h.value->ready);
    l1_.insert(space, page, h.fragment, *h.value);
    return out;
  }

  // A walk, on the first free walker.
  auto walker = std::min_element(walker_free_.begin(), walker_free_.end());
  const Time start = std::max(t, *walker);
  out.walker_wait = start - t;
  const Pte pte = table ? table->lookup(page) : Pte{};
  const std::uint32_t leaf_level = pte.valid() && pte.fragment >= kFragment2M ? 1 : 0;
  const std::uint32_t from = pwc_deepest(space, page);
  out.levels_read = from > leaf_level ? from - leaf_level : 1;
  out.done = start + cfg_.walk_level_latency * out.levels_read;
  *walker = out.done;
  pwc_fill(space, page, leaf_level);
  if (!pte.valid()) return out;  // a fault: nothing is cached
  out.pte = pte;
  // The TLBs cache the fragment: its first page's PTE, covering 2^fragment pages.
  Pte base = pte;
  base.frame = pte.frame - (page & ((1ull << pte.fragment) - 1));
  l2_.insert(space, page, pte.fragment, Cached{base, out.done});
  l1_.insert(space, page, pte.fragment, Cached{base, out.done});
  return out;
}

Time MmuCore::flush(FlushKind kind, std::optional<std::uint32_t> space, std::uint64_t first_page,
                    std::uint64_t pages) {
  for (Tlb<Cached>* tlb : {&l1_, &l2_}) {
    if (!space)
      tlb->invalidate_all();
    else if (pages == 0)
      tlb->invalidate_space(*space);
    else
      tlb->invalidate_range(*space, first_page, pages);
  }
  if (kind == FlushKind::Heavyweight) {
    for (std::uint64_t& t : pwc_tags_)
      if (!space || ((t >> 4) & 0xFFFF) == (*space & 0xFFFF)) t = 0;
    return cfg_.flush_latency_heavyweight;
  }
  return cfg_.flush_latency_lightweight;
}

}  // namespace podsim
