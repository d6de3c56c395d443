#include "models/gpuvm/gpuvm.hpp"

#include <bit>

namespace podsim {

GpuVm::GpuVm(sc_core::sc_module_name name, const GpuVmConfig& cfg, AccelId self,
             std::uint32_t planes, Bytes plane_interleave)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      planes_(planes),
      interleave_shift_(static_cast<unsigned>(std::countr_zero(plane_interleave.count()))),
      tlb_(cfg.tlb_entries, cfg.tlb_ways) {
  from_agent.register_nb_transport_fw(this, &GpuVm::fw);
  to_vram.register_nb_transport_bw(this, &GpuVm::bw);
  to_ports.register_nb_transport_bw(this, &GpuVm::bw_port);
  spawn_method("arrive", arrivals_.event(), [this] {
    arrivals_.drain([this](tlm::tlm_generic_payload* gp) { translate(gp); });
  });
}

tlm::tlm_sync_enum GpuVm::fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& d) {
  arrivals_.push(sim_now() + from_sc(d), &gp);
  return tlm::TLM_ACCEPTED;
}

// Responses pass straight back to the agent.
tlm::tlm_sync_enum GpuVm::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d) {
  return from_agent->nb_transport_bw(gp, ph, d);
}

void GpuVm::translate(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
  a.stamp(HopKind::GpuVm, now);
  translations_.inc();

  const std::uint64_t page = a.vaddr >> kPageShift;
  const auto t = translate_page(tlb_, cfg_, a.vmid, page, [&]() -> std::optional<Pte> {
    auto it = tables_.find(a.vmid);
    if (it == tables_.end()) return std::nullopt;
    const Pte pte = it->second.lookup(page);
    if (pte.target == PteTarget::Invalid) return std::nullopt;
    return pte;
  });
  (t.tlb_hit ? tlb_hits_ : tlb_misses_).inc();
  const Time cost = t.cost;
  const Pte pte = t.entry.value_or(Pte{});

  const bool write_denied = a.op == AccessOp::Write && !pte.writable;
  if (pte.target == PteTarget::Invalid || write_denied) {
    faults_.inc();
    a.status = AccessStatus::Fault;
    gp->set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    tlm::tlm_phase ph = tlm::BEGIN_RESP;
    sc_core::sc_time d = to_sc(cost);
    from_agent->nb_transport_bw(*gp, ph, d);
    return;
  }

  const std::uint64_t offset = a.vaddr & (kPageSize - 1);
  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(cost);
  if (pte.target == PteTarget::Vram) {
    local_.inc();
    a.pa = (pte.frame << kPageShift) | offset;
    a.dst = self_;
    gp->set_address(a.pa);
    to_vram->nb_transport_fw(*gp, ph, d);
  } else {
    remote_.inc();
    a.npa = (pte.frame << kPageShift) | offset;
    a.dst = npa_accel(a.npa);
    a.route_to = a.dst;
    a.plane = plane_of(a.npa);
    gp->set_address(a.npa);
    to_ports[static_cast<int>(a.plane)]->nb_transport_fw(*gp, ph, d);
  }
}

tlm::tlm_sync_enum GpuVm::bw_port(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                  sc_core::sc_time& d) {
  return from_agent->nb_transport_bw(gp, ph, d);
}

std::uint32_t GpuVm::plane_of(std::uint64_t npa) const {
  if (planes_ == 1) return 0;
  std::uint64_t h = (npa >> interleave_shift_) * 0x9E3779B97F4A7C15ull;
  h ^= h >> 31;
  return static_cast<std::uint32_t>(h % planes_);
}

void GpuVm::map_page(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte) {
  tables_[vmid].map(va_page, pte);
}

void GpuVm::unmap_page(std::uint16_t vmid, std::uint64_t va_page) {
  auto it = tables_.find(vmid);
  if (it != tables_.end()) it->second.unmap(va_page);
}

void GpuVm::invalidate_tlb(std::uint16_t vmid) {
  invalidations_.inc();
  tlb_.invalidate_space(vmid);
}

void GpuVm::invalidate_all() {
  invalidations_.inc();
  tlb_.invalidate_all();
}

void GpuVm::reset() {
  tables_.clear();
  tlb_.invalidate_all();
}

const GpuPageTable* GpuVm::page_table(std::uint16_t vmid) const {
  auto it = tables_.find(vmid);
  return it == tables_.end() ? nullptr : &it->second;
}

}  // namespace podsim
