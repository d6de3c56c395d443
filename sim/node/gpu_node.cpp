#include "sim/node/gpu_node.hpp"

#include <string>

namespace podsim {

GpuNode::GpuNode(sc_core::sc_module_name name, const GpuConfig& cfg, const FabricConfig& fabric,
                 AccelId id, driver::VpodInfo vpod, NpaAddrMode mode, std::uint64_t seed,
                 PacketPool& pool, Dispatcher& events, InvariantLog* invariants, SocketTap* tap)
    : sc_module(name),
      vram("vram", cfg.vram, events, seed),
      gpuvm("gpuvm", cfg.gpuvm, id, fabric.planes, fabric.plane_interleave, events, seed),
      npa_mmu("npa_mmu", cfg.npa_mmu, mode, id, invariants, events, seed),
      mailbox("mailbox", cfg.mailbox, id, pool, events),
      agent("agent", cfg.compute, id, pool, events,
            Rng::for_component(seed, std::string(this->name()) + ".agent")),
      driver("driver", cfg.driver, id, std::move(vpod), mode, seed, gpuvm, npa_mmu, vram, mailbox,
             invariants, events),
      tap_(tap),
      id_(id) {
  for (std::uint32_t p = 0; p < fabric.planes; ++p) {
    ports.push_back(std::make_unique<UalinkPort>(("port" + std::to_string(p)).c_str(), fabric.port,
                                                 fabric.link, events, seed));
    UalinkPort& port = *ports.back();
    join(gpuvm.to_ports, port.from_gpuvm);
    join(port.to_npa_mmu, npa_mmu.from_ports);
  }
  agent.set_fill_data(cfg.vram.functional_data);
  join(agent.to_gpuvm, gpuvm.from_agent);
  join(gpuvm.to_vram, vram.in);
  join(npa_mmu.to_vram, vram.in);
  join(mailbox.to_port, ports[0]->from_mailbox);
  join(ports[0]->to_mailbox, mailbox.from_port);
  mailbox.set_tlb_invalidate_handler([this] { gpuvm.invalidate_all(); });
  spawn_method("come_back", up_ev_, [this] {
    for (auto& p : ports)
      p->set_down(false);
    mailbox.set_down(false);
  });
}

void GpuNode::reset(Time down_for) {
  for (auto& p : ports)
    p->set_down(true);
  mailbox.set_down(true);
  mailbox.reset();
  agent.abort();
  driver.device_reset();
  gpuvm.reset();
  npa_mmu.reset();
  vram.reset();
  up_ev_.cancel();
  notify_event(up_ev_, down_for);
}

}  // namespace podsim
