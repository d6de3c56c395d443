#include "sim/node/gpu_node.hpp"

#include <stdexcept>
#include <string>

namespace podsim {

namespace {
std::vector<AccelId> members_of(const driver::VpodInfo& vpod) {
  std::vector<AccelId> out;
  for (std::size_t a = 0; a < vpod.members.size(); ++a)
    if (vpod.members[a]) out.push_back(static_cast<AccelId>(a));
  return out;
}
}  // namespace

GpuNode::GpuNode(sc_core::sc_module_name name, const GpuConfig& cfg, const FabricConfig& fabric,
                 AccelId id, driver::VpodInfo vpod, NpaAddrMode mode, std::uint64_t seed,
                 PacketPool& pool, Dispatcher& events, InvariantLog* invariants, SocketTap* tap,
                 std::uint32_t pod_gpus)
    : sc_module(name),
      vram("vram", cfg.vram, events, seed),
      gpuvm("gpuvm", cfg.gpuvm, id, fabric.planes, fabric.plane_interleave, events, seed),
      npa_mmu("npa_mmu", cfg.npa_mmu, mode, id, invariants, events, seed),
      mailbox("mailbox", cfg.mailbox, id, mode, pool, events),
      agent("agent", cfg.compute, id, pool, events,
            Rng::for_component(seed, std::string(this->name()) + ".agent")),
      driver("driver", cfg.driver, id, vpod, mode, seed, gpuvm, npa_mmu, vram, mailbox, invariants,
             events),
      tap_(tap),
      id_(id),
      mode_(mode),
      b2_(cfg.driver.bugs().test(static_cast<std::size_t>(driver::Bug::B2))),
      peers_(members_of(vpod)),
      pod_gpus_(pod_gpus),
      up_(events, queue_name(*this, "up"), [this](std::uint32_t reset) {
        if (reset != resets_) return;  // a later reset put it off
        for (auto& p : ports)
          p->set_down(false);
        mailbox.set_down(false);
        driver.set_down(false);
      }) {
  for (std::uint32_t p = 0; p < fabric.planes; ++p) {
    ports.push_back(std::make_unique<UalinkPort>(("port" + std::to_string(p)).c_str(), fabric.port,
                                                 fabric.link, events, seed));
    UalinkPort& port = *ports.back();
    join(gpuvm.to_ports, port.from_gpuvm);
    join(port.to_npa_mmu, npa_mmu.from_ports);
    join(mailbox.to_ports, port.from_mailbox);
    join(port.to_mailbox, mailbox.from_ports);
  }
  agent.set_fill_data(cfg.vram.functional_data);
  join(agent.to_gpuvm, gpuvm.from_agent);
  join(gpuvm.to_vram, vram.in);
  join(npa_mmu.to_vram, vram.in);
  mailbox.set_tlb_invalidate_handler([this] { gpuvm.invalidate_all(); });
  vram.set_mailbox_watch([this](const Access& a, Time at) { mailbox.landed(a, at); });
  reserve_ring_pages();
  map_rings(true);  // a GPU starts activated; unconfigure() for a pod that brings it up
  driver.set_rings([this](bool up) { return map_rings(up); });
  driver.driver().set_home_ppod(driver::PpodInfo{id, pod_gpus});
}

// The VRAM the rings' receive pages take (reference §1, §8: every possible sender, here every
// GPU of the pod; layout in models/npa_mmu/npa_layout.hpp). Taken on empty VRAM, at the start
// and as the GPU resets (before anything a process asks for while it is down), which the
// config check makes large enough; the driver's activation maps it in the NPA VM (map_rings).
void GpuNode::reserve_ring_pages() {
  auto frames = vram.allocator().allocate(ring_vram_pages(mode_, pod_gpus_));
  if (!frames)
    throw std::runtime_error(std::string(name()) + ": VRAM too small for the rings' " +
                             std::to_string(ring_pages()) + " receive pages");
  ring_frames_ = std::move(*frames);
}

// The rings' pages in the NPA VM, in the order their frames were taken, as runs of keys in a
// row (the default addressing: one run of every sender's two pages; source-identification: a
// run of three per sender): made afresh each time rather than kept (2,048 keys per GPU, 16 MB
// across a 1,024-GPU pod).
template <class F>
void GpuNode::for_each_ring_run(F f) const {
  const bool ident = mode_ == NpaAddrMode::SourceIdentification;
  if (ident && b2_) {
    // B2: by the sender's position in the vPod's active list, the interrupt ring first.
    for (std::size_t pos = 0; pos < peers_.size(); ++pos)
      if (peers_[pos] != id_) f(static_cast<std::uint64_t>(pos) << kNpaWindowPageBits, 3);
    return;
  }
  if (ident) {
    for (AccelId p = 0; p < pod_gpus_; ++p) {
      if (p == id_) continue;  // no ring to ourselves
      const std::uint64_t first = ring_page_key(mode_, id_, p, RingPage::TlbRing);
      if (ring_page_key(mode_, id_, p, RingPage::IntRing) != first + 1 ||
          ring_page_key(mode_, id_, p, RingPage::Pointers) != first + 2)
        throw std::logic_error("GpuNode: a sender's ring pages are not in a row");
      f(first, 3);
    }
    return;
  }
  // Our own two pages hold the pointers; every sender's TLB and interrupt rings in a row.
  if (pod_gpus_ == 0) return;
  const std::uint64_t first = ring_page_key(mode_, id_, 0, RingPage::TlbRing);
  const auto last = static_cast<AccelId>(pod_gpus_ - 1);
  if (ring_page_key(mode_, id_, last, RingPage::IntRing) != first + 2ull * pod_gpus_ - 1)
    throw std::logic_error("GpuNode: the senders' ring pages are not in a row");
  f(first, 2ull * pod_gpus_);
}

std::uint64_t GpuNode::map_rings(bool up, bool flush) {
  // Each run of keys goes in as one step where its frames count up too (the rings' frames
  // are taken on empty VRAM): the same PTEs as page by page, for a fraction of the work (a
  // 1,024-GPU pod maps 2,048 pages a GPU at its start, and again as each GPU is brought up).
  std::size_t at = 0;
  for_each_ring_run([&](std::uint64_t first, std::uint64_t count) {
    if (!up) {
      npa_mmu.unmap(first, count);
    } else {
      std::uint64_t from = 0;
      for (std::uint64_t k = 1; k <= count; ++k)
        if (k == count || ring_frames_[at + k] != ring_frames_[at + k - 1] + 1) {
          npa_mmu.map_contiguous(first + from, k - from, ring_frames_[at + from], 0);
          from = k;
        }
    }
    at += count;
  });
  if (!up && flush) npa_mmu.flush_tlb();
  return at;
}

std::size_t GpuNode::ring_pages() const {
  std::size_t n = 0;
  for_each_ring_run([&n](std::uint64_t, std::uint64_t count) { n += count; });
  return n;
}

void GpuNode::unconfigure() {
  driver.driver().unconfigure();
  npa_mmu.set_enabled(false);
  map_rings(false, false);  // nothing was translated yet: nothing to flush
  mailbox.halt();
}

void GpuNode::reset(Time down_for) {
  for (auto& p : ports)
    p->set_down(true);
  mailbox.set_down(true);
  mailbox.reset();
  agent.abort();
  driver.device_reset();
  driver.set_down(true);
  gpuvm.reset();
  npa_mmu.reset();
  vram.reset();
  // It comes back activated (down_for covers the driver's reload and bring-up): the rings'
  // pages are the first VRAM it takes again, mapped at once.
  reserve_ring_pages();
  map_rings(true);
  up_.push(sim_now() + down_for, ++resets_);
}

}  // namespace podsim
