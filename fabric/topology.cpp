#include "fabric/topology.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace podsim {

namespace {
// A round trip's trail (Access::hops) starts again at each attempt (a retry restarts it) and
// holds, through s switches each way: the request's issue (or retry wait), GPUVM, port
// transmit, s + 1 links, s switches, port receive, NPA MMU and VRAM; the response's port
// transmit, s + 1 links, s switches, port receive and completion: 4 s + 11 stamps. The longest
// path these topologies make crosses three switches (leaf, spine, leaf): 23 stamps. A trail
// that overflowed would lose its access's per-hop breakdown (ComputeAgent::complete).
constexpr std::size_t kMostSwitchesOnAPath = 3;
static_assert(4 * kMostSwitchesOnAPath + 11 <= Access::kMaxHops,
              "a round trip's trail no longer fits in Access::hops: raise kMaxHops");
}  // namespace

FabricPlane::FabricPlane(sc_core::sc_module_name name, const FabricConfig& cfg, std::uint32_t gpus,
                         Dispatcher& events, std::uint64_t seed)
    : sc_module(name), cfg_(cfg), gpus_per_leaf_(gpus), gpu_links_(gpus, nullptr) {
  const std::string prefix = std::string(this->name());
  // Each switch seeds its generators from the run seed and its own name (planes and switches
  // differ by name): no seed arithmetic here.
  if (cfg.topology == Topology::SingleSwitch) {
    switches_.push_back(std::make_unique<UaloeSwitch>("switch0", cfg.switch_, cfg.port, cfg.link,
                                                      gpus, events, seed));
    UaloeSwitch& sw = *switches_.back();
    for (std::uint32_t g = 0; g < gpus; ++g) {
      Link& l = make_link(fmt::format("link{}", g), true, g, 0);
      sw.connect(g, l, Link::B);
      sw.set_route(static_cast<AccelId>(g), g);
      sw.set_peer_buffer(g, cfg.port.rx_buffer);
      gpu_links_[g] = &l;
    }
    return;
  }

  // Two tiers: leaf l holds GPUs [l*G, (l+1)*G) on its first ports and one up-link to each
  // spine on the ports after them; spine s has one port per leaf.
  gpus_per_leaf_ = cfg.leaf_spine.gpus_per_leaf;
  const std::uint32_t leaves = (gpus + gpus_per_leaf_ - 1) / gpus_per_leaf_;
  const std::uint32_t spines = leaves > 1 ? cfg.leaf_spine.spines : 0;
  for (std::uint32_t l = 0; l < leaves; ++l) {
    const std::uint32_t down = std::min(gpus_per_leaf_, gpus - l * gpus_per_leaf_);
    switches_.push_back(std::make_unique<UaloeSwitch>(fmt::format("leaf{}", l).c_str(), cfg.switch_,
                                                      cfg.port, cfg.link, down + spines, events,
                                                      seed));
  }
  for (std::uint32_t s = 0; s < spines; ++s)
    switches_.push_back(std::make_unique<UaloeSwitch>(
        fmt::format("spine{}", s).c_str(), cfg.switch_, cfg.port, cfg.link, leaves, events, seed));
  for (std::uint32_t l = 0; l < leaves; ++l) {
    UaloeSwitch& leaf = *switches_[l];
    const std::uint32_t first = l * gpus_per_leaf_;
    const std::uint32_t down = std::min(gpus_per_leaf_, gpus - first);
    for (std::uint32_t k = 0; k < down; ++k) {
      Link& link = make_link(fmt::format("link{}", first + k), true, first + k, l);
      leaf.connect(k, link, Link::B);
      leaf.set_peer_buffer(k, cfg.port.rx_buffer);
      gpu_links_[first + k] = &link;
    }
    for (std::uint32_t s = 0; s < spines; ++s) {
      Link& up = make_link(fmt::format("uplink{}_{}", l, s), false, l, leaves + s);
      leaf.connect(down + s, up, Link::A);
      switches_[leaves + s]->connect(l, up, Link::B);
      leaf.set_peer_buffer(down + s, cfg.switch_.input_buffer);
      switches_[leaves + s]->set_peer_buffer(l, cfg.switch_.input_buffer);
    }
    for (std::uint32_t g = 0; g < gpus; ++g) {
      if (g / gpus_per_leaf_ == l)
        leaf.set_route(static_cast<AccelId>(g), g - first);
      else
        leaf.set_route(static_cast<AccelId>(g), down, spines);  // any up-link, per flow
    }
  }
  for (std::uint32_t s = 0; s < spines; ++s)
    for (std::uint32_t g = 0; g < gpus; ++g)
      switches_[leaves + s]->set_route(static_cast<AccelId>(g), g / gpus_per_leaf_);
}

Link& FabricPlane::make_link(const std::string& name, bool a_is_gpu, std::uint32_t a,
                             std::uint32_t b) {
  links_.push_back(std::make_unique<Link>(name.c_str(), cfg_.link,
                                          cfg_.port.tx_latency() + cfg_.port.rx_latency()));
  link_ends_.push_back(LinkEnds{links_.back().get(), {a_is_gpu, false}, {a, b}});
  return *links_.back();
}

void FabricPlane::attach(UalinkPort& port, AccelId id) {
  Link& link = *gpu_links_.at(id);
  port.connect(link, Link::A);
  port.set_peer_buffer(cfg_.switch_.input_buffer);
}

std::uint32_t FabricPlane::switch_hops(AccelId src, AccelId dst) const {
  if (cfg_.topology == Topology::SingleSwitch) return 1;
  return src / gpus_per_leaf_ == dst / gpus_per_leaf_ ? 1 : 3;
}

Fabric::Fabric(sc_core::sc_module_name name, const FabricConfig& cfg, std::uint32_t gpus,
               Dispatcher& events, std::uint64_t seed)
    : sc_module(name) {
  for (std::uint32_t p = 0; p < cfg.planes; ++p)
    planes_.push_back(
        std::make_unique<FabricPlane>(fmt::format("plane{}", p).c_str(), cfg, gpus, events, seed));
}

void Fabric::attach(UalinkPort& port, AccelId id, std::uint32_t plane) {
  planes_.at(plane)->attach(port, id);
}

}  // namespace podsim
