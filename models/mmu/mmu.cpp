#include "models/mmu/mmu.hpp"

#include <algorithm>

namespace podsim {

MmuCore::MmuCore(const MmuConfig& cfg, Rng rng)
    : cfg_(cfg),
      l1_(cfg.l1.entries, cfg.l1.ways, cfg.l1.replacement, Rng(rng.next())),
      l2_(cfg.l2.entries, cfg.l2.ways, cfg.l2.replacement, Rng(rng.next())),
      pwc_(cfg.pwc_entries),
      walker_free_(cfg.walkers) {}

// The deepest level whose entry the page-walk cache holds for `page` (levels count from the
// leaf, 0, to the root, walk_levels - 1); walk_levels when it holds none.
std::uint32_t MmuCore::pwc_deepest(std::uint32_t space, std::uint64_t page) {
  std::uint32_t best = cfg_.walk_levels;
  PwcLine* hit = nullptr;
  for (PwcLine& l : pwc_) {
    if (!l.valid || l.space != space || l.level >= best) continue;
    if ((page >> (kRadixBits * l.level)) == l.prefix) {
      best = l.level;
      hit = &l;
    }
  }
  if (hit) hit->last_use = ++pwc_clock_;
  return best;
}

// Caches the upper-level entries a walk read (levels above the leaf).
void MmuCore::pwc_fill(std::uint32_t space, std::uint64_t page, std::uint32_t leaf_level) {
  if (pwc_.empty()) return;
  for (std::uint32_t level = leaf_level + 1; level < cfg_.walk_levels; ++level) {
    const std::uint64_t prefix = page >> (kRadixBits * level);
    PwcLine* victim = &pwc_[0];
    for (PwcLine& l : pwc_) {
      if (l.valid && l.space == space && l.level == level && l.prefix == prefix) {
        victim = &l;
        break;
      }
      if (!l.valid && victim->valid) victim = &l;
      if (l.valid && victim->valid && l.last_use < victim->last_use) victim = &l;
    }
    *victim = PwcLine{true, space, level, prefix, ++pwc_clock_};
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
    for (PwcLine& l : pwc_)
      if (!space || l.space == *space) l.valid = false;
    return cfg_.flush_latency_heavyweight;
  }
  return cfg_.flush_latency_lightweight;
}

}  // namespace podsim
