#include "models/gpu_node.hpp"

#include <string>

namespace podsim {

GpuNode::GpuNode(sc_core::sc_module_name name, const GpuConfig& cfg, const PortConfig& port_cfg,
                 AccelId id, NpaAddrMode mode, std::uint64_t seed, PacketPool& pool)
    : sc_module(name),
      vram("vram", cfg.vram),
      gpuvm("gpuvm", cfg.gpuvm, id),
      npa_mmu("npa_mmu", cfg.npa_mmu, mode),
      mailbox("mailbox", cfg.mailbox, id, pool),
      port("port", port_cfg, id),
      agent("agent", cfg.compute, id, pool,
            Rng::for_component(seed, std::string(this->name()) + ".agent")),
      driver("driver", cfg.driver, id, mode,
             Rng::for_component(seed, std::string(this->name()) + ".driver"), gpuvm, npa_mmu, vram,
             mailbox),
      id_(id) {
  agent.to_gpuvm.bind(gpuvm.from_agent);
  gpuvm.to_vram.bind(vram.in);
  gpuvm.to_port.bind(port.from_gpuvm);
  port.to_npa_mmu.bind(npa_mmu.from_port);
  npa_mmu.to_vram.bind(vram.in);
  mailbox.to_port.bind(port.from_mailbox);
  port.to_mailbox.bind(mailbox.from_port);
}

}  // namespace podsim
