#include "fabric/topology.hpp"

#include <stdexcept>
#include <string>

namespace podsim {

SingleSwitchFabric::SingleSwitchFabric(sc_core::sc_module_name name, const FabricConfig& cfg,
                                       std::uint32_t gpus)
    : Fabric(name), cfg_(cfg), switch_("switch0", cfg.switch_, cfg.port) {
  if (gpus > cfg.switch_.ports)
    throw std::logic_error("SingleSwitchFabric: more GPUs than switch ports");
  // Switch port i faces GPU i; the switch's multi-sockets number ports in binding order.
  for (std::uint32_t i = 0; i < gpus; ++i) {
    links_.push_back(std::make_unique<Link>(("link" + std::to_string(i)).c_str(), cfg.link));
    links_.back()->b_out.bind(switch_.in);
    switch_.out.bind(links_.back()->b_in);
    switch_.set_route(static_cast<AccelId>(i), i);
  }
}

void SingleSwitchFabric::attach(UalinkPort& port, AccelId id) {
  Link& link = *links_.at(id);
  port.tx.bind(link.a_in);
  link.a_out.bind(port.rx);
}

std::unique_ptr<Fabric> make_fabric(const FabricConfig& cfg, std::uint32_t gpus) {
  switch (cfg.topology) {
    case Topology::SingleSwitch: return std::make_unique<SingleSwitchFabric>("fabric", cfg, gpus);
  }
  throw std::logic_error("unknown topology");
}

}  // namespace podsim
