#include "sim/kernel/access.hpp"

namespace podsim {

std::string_view hop_name(HopKind k) {
  switch (k) {
    case HopKind::Issue: return "issue";
    case HopKind::GpuVm: return "gpuvm";
    case HopKind::PortTx: return "port_tx";
    case HopKind::Link: return "link";
    case HopKind::Switch: return "switch";
    case HopKind::PortRx: return "port_rx";
    case HopKind::NpaMmu: return "npa_mmu";
    case HopKind::Vram: return "vram";
    case HopKind::RetryWait: return "retry_wait";
    case HopKind::Complete: return "complete";
    case HopKind::Count: break;
  }
  return "?";
}

void Access::reset_for_use() {
  id = 0;
  src = dst = route_to = 0;
  kind = PacketKind::Request;
  op = AccessOp::Read;
  status = AccessStatus::Ok;
  posted = false;
  sync = false;
  measured = Measured::No;
  mailbox = MailboxWrite::None;
  size = 0;
  vmid = 0;
  data_bytes = 0;
  vaddr = npa = pa = 0;
  plane = 0;
  tag = 0;
  grant = 0;
  issued = Time{};
  hop_count = 0;
  hops_dropped = 0;
}

tlm::tlm_extension_base* Access::clone() const {
  auto* a = new Access(*this);
  a->heap_copy_ = true;
  return a;
}

void Access::copy_from(const tlm::tlm_extension_base& other) {
  const bool heap_copy = heap_copy_;
  *this = static_cast<const Access&>(other);
  heap_copy_ = heap_copy;
}

PacketPool::PacketPool(std::size_t reserve) {
  all_.reserve(reserve);
  free_.reserve(reserve);
  for (std::size_t i = 0; i < reserve; ++i)
    grow();
}

PacketPool::~PacketPool() {
  for (Packet* p : all_)
    delete p;
}

void PacketPool::grow() {
  auto* p = new Packet(this);
  // What never changes for a packet, set once: its data is its Access's, no byte enables,
  // no streaming (a streaming width at least any data length).
  p->set_data_ptr(p->access.data.data());
  p->set_byte_enable_ptr(nullptr);
  p->set_byte_enable_length(0);
  p->set_streaming_width(Access::kMaxData);
  all_.push_back(p);
  free_.push_back(p);
}

tlm::tlm_generic_payload& PacketPool::acquire() {
  if (free_.empty()) grow();
  Packet* gp = free_.back();
  free_.pop_back();
  if (++in_use_ > peak_) peak_ = in_use_;
  access_of(*gp).reset_for_use();
  gp->set_address(0);
  gp->set_data_length(0);
  gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  gp->acquire();
  return *gp;
}

void PacketPool::free(tlm::tlm_generic_payload* gp) {
  --in_use_;
  free_.push_back(static_cast<Packet*>(gp));
}

}  // namespace podsim
