#include "models/gpuvm/gpuvm.hpp"

#include <bit>
#include <string>

namespace podsim {

GpuVm::GpuVm(sc_core::sc_module_name name, const GpuVmConfig& cfg, AccelId self,
             std::uint32_t planes, Bytes plane_interleave, Dispatcher& events, std::uint64_t seed)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      planes_(planes),
      interleave_shift_(static_cast<unsigned>(std::countr_zero(plane_interleave.count()))),
      mmu_(cfg, Rng::for_component(seed, std::string(this->name()))),
      arrivals_(events, queue_name(*this, "arrivals"),
                [this](tlm::tlm_generic_payload* gp) { translate(gp); }),
      to_agent_([this] { return from_agent.operator->(); }),
      to_vram_lane_(
          [this] { return to_vram.operator->(); },
          [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) { answer(gp, d); }) {
  for (std::uint32_t p = 0; p < planes_; ++p)
    to_port_lanes_.emplace_back(
        [this, p] { return to_ports[static_cast<int>(p)]; },
        [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) { answer(gp, d); });
  arrivals_.fetch_ahead<&prefetch_packet_item>();
  from_agent.register_nb_transport_fw(this, &GpuVm::fw);
  to_vram.register_nb_transport_bw(this, &GpuVm::bw);
  to_ports.register_nb_transport_bw(this, &GpuVm::bw_port);
}

tlm::tlm_sync_enum GpuVm::fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d) {
  if (ph == tlm::BEGIN_REQ) [[likely]]
    return accept_request(arrivals_, gp, ph, d);
  if (ph == tlm::END_RESP) return to_agent_.end_response(gp);
  phase_error(name(), ph);
}

// Answers from VRAM and the ports pass straight back to the agent.
tlm::tlm_sync_enum GpuVm::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d) {
  if (ph == tlm::END_REQ) return to_vram_lane_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  to_vram_lane_.begin_response(gp);
  answer(gp, d);
  return tlm::TLM_COMPLETED;
}

tlm::tlm_sync_enum GpuVm::bw_port(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                  sc_core::sc_time& d) {
  RequestLane& lane = to_port_lanes_[static_cast<std::size_t>(id)];
  if (ph == tlm::END_REQ) return lane.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  lane.begin_response(gp);
  answer(gp, d);
  return tlm::TLM_COMPLETED;
}

void GpuVm::answer(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
  if (access_of(gp).posted) {  // the agent expects nothing: our reference goes
    gp.release();
    return;
  }
  to_agent_.respond(gp, d);
}

std::uint32_t GpuVm::plane_of(std::uint64_t npa) const {
  if (planes_ == 1) return 0;
  return static_cast<std::uint32_t>(mix64(npa >> interleave_shift_) % planes_);
}

void GpuVm::translate(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
  a.stamp(HopKind::GpuVm, now);
  translations_.inc();

  const std::uint64_t page = a.vaddr >> kPageShift;
  const auto t = mmu_.translate(a.vmid, page, now, page_table(a.vmid));
  if (t.l1_hit) {
    l1_hits_.inc();
  } else if (t.l2_hit) {
    l2_hits_.inc();
  } else {
    walks_.inc();
    levels_read_.inc(t.levels_read);
    walker_wait_.record(t.walker_wait);
  }
  sc_core::sc_time d = to_sc(t.done - now);

  const bool write = a.op != AccessOp::Read;
  if (!t.pte || (write && !t.pte->writable)) {
    faults_.inc();
    if (fault_log_.size() < cfg_.fault_log) fault_log_.push_back({now, a.vmid, a.vaddr, write});
    a.status = AccessStatus::Fault;
    gp->set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    if (a.posted) {  // its fault is counted here only: nobody waits for the answer
      ++posted_faults_;
      posted_fault_bytes_.add(a);
    }
    answer(*gp, d);
    return;
  }

  const std::uint64_t offset = a.vaddr & (kPageSize - 1);
  if (t.pte->target == PteTarget::Vram) {
    local_.inc();
    a.pa = (t.pte->frame << kPageShift) | offset;
    a.dst = self_;
    gp->set_address(a.pa);
    to_vram_lane_.send(*gp, d);
  } else {
    remote_.inc();
    a.npa = (t.pte->frame << kPageShift) | offset;
    a.grant = t.pte->tag;
    a.dst = npa_accel(a.npa);
    a.route_to = a.dst;
    a.plane = plane_of(a.npa);
    gp->set_address(a.npa);
    to_port_lanes_[a.plane].send(*gp, d);
  }
}

void GpuVm::map_page(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte) {
  if (vmid >= tables_.size()) tables_.resize(vmid + 1u);
  if (!tables_[vmid]) tables_[vmid] = std::make_unique<PageTable>();
  tables_[vmid]->map(va_page, pte);
}

void GpuVm::map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages, const Pte& proto,
                std::span<const std::uint64_t> frames) {
  if (vmid >= tables_.size()) tables_.resize(vmid + 1u);
  if (!tables_[vmid]) tables_[vmid] = std::make_unique<PageTable>();
  auto frame = [frames, base = proto.frame](std::uint64_t i) {
    return frames.empty() ? base + i : frames[i];
  };
  tables_[vmid]->map(va_page, pages, FragmentedPtes(proto, va_page, pages, frame));
}

void GpuVm::unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages) {
  if (vmid < tables_.size() && tables_[vmid]) tables_[vmid]->unmap(va_page, pages);
}

Time GpuVm::invalidate(std::uint16_t vmid, FlushKind kind, std::uint64_t first,
                       std::uint64_t pages) {
  (kind == FlushKind::Heavyweight ? heavy_ : light_).inc();
  return mmu_.flush(kind, vmid, first, pages);
}

void GpuVm::invalidate_all() {
  heavy_.inc();
  mmu_.flush(FlushKind::Heavyweight);
}

void GpuVm::reset() {
  tables_.clear();
  mmu_.flush(FlushKind::Heavyweight);
}

const PageTable* GpuVm::page_table(std::uint16_t vmid) const {
  return vmid < tables_.size() ? tables_[vmid].get() : nullptr;
}

void GpuVm::digest(Digest& d) const {
  for (std::size_t vmid = 0; vmid < tables_.size(); ++vmid)
    if (tables_[vmid]) {
      d.add(vmid);
      tables_[vmid]->digest(d);
    }
}

void GpuVm::digest_caches(Digest& d) const {
  mmu_.digest(d);
}

}  // namespace podsim
