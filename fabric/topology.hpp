// Topologies: the switch planes of a pod, built from the fabric config. Each plane is a
// single switch or a two-tier leaf/spine network; each GPU has one port per plane. Routes
// are set by destination accelerator ID (leaf up-links are equal-cost, chosen per flow), and
// every link end is told how much buffer its receiver has (its credits).
#pragma once

#include <memory>
#include <vector>

#include "fabric/fabric_config.hpp"
#include "fabric/link.hpp"
#include "fabric/ualink_port.hpp"
#include "fabric/ualoe_switch.hpp"

namespace podsim {

class FabricPlane final : public sc_core::sc_module {
 public:
  FabricPlane(sc_core::sc_module_name name, const FabricConfig& cfg, std::uint32_t gpus,
              Dispatcher& events, std::uint64_t seed);
  // Wires GPU `id`'s port for this plane into it.
  void attach(UalinkPort& port, AccelId id);
  // Switches a packet from `src` to `dst` passes through.
  std::uint32_t switch_hops(AccelId src, AccelId dst) const;
  const std::vector<std::unique_ptr<UaloeSwitch>>& switches() const { return switches_; }
  // Every link of the plane and what is at its two ends: a GPU (its ID) or a switch (its
  // index in switches()). In the order the links were made.
  struct LinkEnds {
    Link* link;
    bool gpu[2];
    std::uint32_t index[2];
  };
  const std::vector<LinkEnds>& link_ends() const { return link_ends_; }
  // GPU `id`'s link into the plane.
  Link& gpu_link(AccelId id) { return *gpu_links_.at(id); }
  void finalize() {
    for (auto& s : switches_)
      s->finalize();
  }

 private:
  // A link from end A (a GPU or switch `a`) to end B (switch `b`).
  Link& make_link(const std::string& name, bool a_is_gpu, std::uint32_t a, std::uint32_t b);

  FabricConfig cfg_;
  std::uint32_t gpus_per_leaf_;
  std::vector<std::unique_ptr<UaloeSwitch>> switches_;  // single: [switch]; else leaves, spines
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Link*> gpu_links_;  // by GPU
  std::vector<LinkEnds> link_ends_;
};

class Fabric final : public sc_core::sc_module {
 public:
  Fabric(sc_core::sc_module_name name, const FabricConfig& cfg, std::uint32_t gpus,
         Dispatcher& events, std::uint64_t seed);
  // Wires GPU `id`'s port for `plane` into that plane.
  void attach(UalinkPort& port, AccelId id, std::uint32_t plane);
  std::uint32_t planes() const { return static_cast<std::uint32_t>(planes_.size()); }
  const FabricPlane& plane(std::uint32_t p) const { return *planes_[p]; }
  FabricPlane& plane(std::uint32_t p) { return *planes_[p]; }
  // The run is over: derived stats are gathered (once, before stats are read).
  void finalize() {
    for (auto& p : planes_)
      p->finalize();
  }

 private:
  std::vector<std::unique_ptr<FabricPlane>> planes_;
};

}  // namespace podsim
