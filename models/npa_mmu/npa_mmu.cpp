#include "models/npa_mmu/npa_mmu.hpp"

#include <fmt/format.h>

#include "models/gpuvm/page_table.hpp"

namespace podsim {

NpaMmu::NpaMmu(sc_core::sc_module_name name, const NpaMmuConfig& cfg, NpaAddrMode mode,
               AccelId self, InvariantLog* invariants)
    : sc_module(name),
      cfg_(cfg),
      mode_(mode),
      self_(self),
      invariants_(invariants),
      tlb_(cfg.tlb_entries, cfg.tlb_ways) {
  from_ports.register_nb_transport_fw(this, &NpaMmu::fw);
  to_vram.register_nb_transport_bw(this, &NpaMmu::bw);
  spawn_method("arrive", arrivals_.event(), [this] {
    arrivals_.drain([this](tlm::tlm_generic_payload* gp) { translate(gp); });
  });
}

std::uint64_t NpaMmu::key_of(std::uint64_t npa, AccelId requester) const {
  std::uint64_t page = (npa >> kPageShift) & kNpaWindowPageMask;
  if (mode_ == NpaAddrMode::SourceIdentification)
    page |= static_cast<std::uint64_t>(requester) << kNpaWindowPageBits;
  return page;
}

tlm::tlm_sync_enum NpaMmu::fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                              sc_core::sc_time& d) {
  arrivals_.push(sim_now() + from_sc(d), &gp);
  return tlm::TLM_ACCEPTED;
}

tlm::tlm_sync_enum NpaMmu::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d) {
  return from_ports[static_cast<int>(access_of(gp).plane)]->nb_transport_bw(gp, ph, d);
}

void NpaMmu::translate(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
  a.stamp(HopKind::NpaMmu, now);
  translations_.inc();

  const std::uint64_t key = key_of(a.npa, a.src);
  const auto t = translate_page(tlb_, cfg_, 0, key, [&]() -> std::optional<NpaPte> {
    auto it = table_.find(key);
    if (it == table_.end() || !it->second.valid) return std::nullopt;
    return it->second;
  });
  (t.tlb_hit ? tlb_hits_ : tlb_misses_).inc();
  const Time cost = t.cost;
  const NpaPte pte = t.entry.value_or(NpaPte{});

  sc_core::sc_time d = to_sc(cost);
  if (!pte.valid || pte.retry) {
    (pte.valid ? retries_ : faults_).inc();
    a.status = pte.valid ? AccessStatus::Retry : AccessStatus::RemoteFault;
    gp->set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    tlm::tlm_phase ph = tlm::BEGIN_RESP;
    from_ports[static_cast<int>(a.plane)]->nb_transport_bw(*gp, ph, d);
    return;
  }
  if (invariants_ && !released_.empty()) {
    auto r = released_.find(pte.tag);
    if (r != released_.end() && r->second[a.src])
      invariants_->report(now, fmt::format("gpu{} served an access from gpu{} to export {:016x} "
                                           "(NPA {:#x}) after gpu{} had released it",
                                           self_, a.src, pte.tag, a.npa, a.src));
  }
  a.pa = (pte.vram_page << kPageShift) | (a.npa & (kPageSize - 1));
  gp->set_address(a.pa);
  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  to_vram->nb_transport_fw(*gp, ph, d);
}

void NpaMmu::map_page(std::uint64_t key, std::uint64_t vram_page, std::uint64_t tag) {
  table_[key] = NpaPte{true, false, vram_page, tag};
}

void NpaMmu::set_retry(std::uint64_t key, bool retry) {
  auto it = table_.find(key);
  if (it != table_.end()) it->second.retry = retry;
}

void NpaMmu::unmap_page(std::uint64_t key) {
  table_.erase(key);
}

void NpaMmu::flush_tlb() {
  flushes_.inc();
  tlb_.invalidate_all();
}

bool NpaMmu::any_mapped(std::uint64_t first_key, std::uint64_t pages) const {
  if (pages < table_.size()) {
    for (std::uint64_t k = first_key; k < first_key + pages; ++k)
      if (table_.count(k)) return true;
    return false;
  }
  for (const auto& [k, pte] : table_)
    if (k >= first_key && k - first_key < pages) return true;
  return false;
}

void NpaMmu::mark_released(std::uint64_t tag, AccelId importer) {
  auto& v = released_[tag];
  if (v.empty()) v.assign(kMaxAccels, false);
  v[importer] = true;
}

void NpaMmu::reset() {
  table_.clear();
  released_.clear();
  tlb_.invalidate_all();
}

}  // namespace podsim
