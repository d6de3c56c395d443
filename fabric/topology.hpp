// Topologies: the switches and links of a pod, built from the fabric config, with the GPUs'
// ports attached and routes set. Chosen by an explicit factory from the config's enum.
#pragma once

#include <memory>
#include <vector>

#include "fabric/fabric_config.hpp"
#include "fabric/link.hpp"
#include "fabric/ualink_port.hpp"
#include "fabric/ualoe_switch.hpp"

namespace podsim {

class Fabric : public sc_core::sc_module {
 public:
  using sc_core::sc_module::sc_module;
  // Wires GPU `id`'s port into the fabric (its links and switches already exist).
  virtual void attach(UalinkPort& port, AccelId id) = 0;
  // Hops a packet from `src` to `dst` crosses: links and switches (for analysis).
  virtual std::uint32_t switch_hops(AccelId src, AccelId dst) const = 0;
};

// Every GPU on one switch: GPU i on switch port i.
class SingleSwitchFabric final : public Fabric {
 public:
  SingleSwitchFabric(sc_core::sc_module_name name, const FabricConfig& cfg, std::uint32_t gpus);
  void attach(UalinkPort& port, AccelId id) override;
  std::uint32_t switch_hops(AccelId, AccelId) const override { return 1; }

 private:
  FabricConfig cfg_;
  UaloeSwitch switch_;
  std::vector<std::unique_ptr<Link>> links_;
};

std::unique_ptr<Fabric> make_fabric(const FabricConfig& cfg, std::uint32_t gpus);

}  // namespace podsim
