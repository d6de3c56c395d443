#include "models/gpu_node.hpp"

#include <string>

namespace podsim {

GpuNode::GpuNode(sc_core::sc_module_name name, const GpuConfig& cfg, const PortConfig& port_cfg,
                 AccelId id, driver::VpodInfo vpod, NpaAddrMode mode, std::uint64_t seed,
                 PacketPool& pool, InvariantLog* invariants)
    : sc_module(name),
      vram("vram", cfg.vram),
      gpuvm("gpuvm", cfg.gpuvm, id),
      npa_mmu("npa_mmu", cfg.npa_mmu, mode, id, invariants),
      mailbox("mailbox", cfg.mailbox, id, pool),
      port("port", port_cfg, id),
      agent("agent", cfg.compute, id, pool,
            Rng::for_component(seed, std::string(this->name()) + ".agent")),
      driver("driver", cfg.driver, id, std::move(vpod), mode, seed, gpuvm, npa_mmu, vram, mailbox,
             invariants),
      id_(id) {
  agent.to_gpuvm.bind(gpuvm.from_agent);
  gpuvm.to_vram.bind(vram.in);
  gpuvm.to_port.bind(port.from_gpuvm);
  port.to_npa_mmu.bind(npa_mmu.from_port);
  npa_mmu.to_vram.bind(vram.in);
  mailbox.to_port.bind(port.from_mailbox);
  port.to_mailbox.bind(mailbox.from_port);
  mailbox.set_tlb_invalidate_handler([this] { gpuvm.invalidate_all(); });
  spawn_method("come_back", up_ev_, [this] {
    port.set_down(false);
    mailbox.set_down(false);
  });
}

void GpuNode::reset(Time down_for) {
  port.set_down(true);
  mailbox.set_down(true);
  mailbox.reset();
  agent.abort();
  driver.device_reset();
  gpuvm.reset();
  npa_mmu.reset();
  vram.reset();
  up_ev_.cancel();
  up_ev_.notify(to_sc(down_for));
}

}  // namespace podsim
