#include "fabric/ualoe_switch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "fabric/framing.hpp"

namespace podsim {

UaloeSwitch::Output::Output(std::uint32_t i) : stats("port" + std::to_string(i)) {}

UaloeSwitch::UaloeSwitch(sc_core::sc_module_name name, const SwitchConfig& cfg,
                         const PortConfig& port_cfg)
    : sc_module(name),
      cfg_(cfg),
      port_cfg_(port_cfg),
      rate_(port_cfg.rate()),
      routes_(kMaxAccels, kNoRoute),
      arrivals_(256) {
  in.register_nb_transport_fw(this, &UaloeSwitch::fw);
  for (std::uint32_t i = 0; i < cfg.ports; ++i) {
    outputs_.push_back(std::make_unique<Output>(i));
    stats_.add_child(outputs_.back()->stats);
  }
  spawn_method("forward", arrivals_.event(),
               [this] { arrivals_.drain([this](const Arrival& a) { forward(a); }); });
}

void UaloeSwitch::set_route(AccelId dst, std::uint32_t port) {
  if (port >= cfg_.ports)
    throw std::invalid_argument(std::string(name()) + ": route to port " + std::to_string(port) +
                                " of a " + std::to_string(cfg_.ports) + "-port switch");
  routes_[dst] = port;
}

tlm::tlm_sync_enum UaloeSwitch::fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                   sc_core::sc_time& d) {
  arrivals_.push(sim_now() + from_sc(d), Arrival{&gp, id});
  return tlm::TLM_ACCEPTED;
}

void UaloeSwitch::forward(const Arrival& arr) {
  tlm::tlm_generic_payload& gp = *arr.gp;
  Access& a = access_of(gp);
  const Time now = sim_now();
  a.stamp(HopKind::Switch, now);
  const std::uint32_t port = routes_[a.route_to];
  if (port == kNoRoute)
    throw std::logic_error(std::string(name()) + ": no route to accelerator " +
                           std::to_string(a.route_to));
  Output& o = *outputs_[port];
  const Bytes wire = wire_bytes(a, port_cfg_);
  const Time ready = now + cfg_.latency;
  const Time start = std::max(ready, o.free_at);
  const Time ser = rate_.transfer_time(wire);
  o.free_at = start + ser;
  o.busy += ser;
  o.packets.inc();
  o.wire_bytes.inc(wire.count());
  forwarded_.inc();
  queue_delay_.record(start - ready);

  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(start - now);
  out[static_cast<int>(port)]->nb_transport_fw(gp, ph, d);
}

}  // namespace podsim
