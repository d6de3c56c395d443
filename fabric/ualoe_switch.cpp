#include "fabric/ualoe_switch.hpp"

#include <stdexcept>
#include <string>

#include "fabric/traffic.hpp"

namespace podsim {

UaloeSwitch::UaloeSwitch(sc_core::sc_module_name name, const SwitchConfig& cfg,
                         const PortConfig& port_cfg, const LinkConfig& link_cfg,
                         std::uint32_t used_ports, Dispatcher& events, std::uint64_t seed)
    : sc_module(name),
      cfg_(cfg),
      port_cfg_(port_cfg),
      out_part_(std::min(cfg.latency, port_cfg.tx_latency())),
      in_part_(cfg.latency - out_part_),
      costs_(port_cfg),
      routes_(kMaxAccels),
      wires_(used_ports),
      inputs_(used_ports),
      waiting_for_(used_ports),
      arrivals_(
          events, queue_name(*this, "arrivals"), [this](const Arrival& a) { arrive(a); }, 256) {
  arrivals_.fetch_ahead<&UaloeSwitch::fetch_packet>();
  if (used_ports > cfg.ports)
    throw std::logic_error(std::string(this->name()) + ": more links than switch ports");
  for (std::size_t tc = 0; tc < kTrafficClasses; ++tc)
    class_delay_[tc] = std::make_unique<Distribution>(
        stats_, "output_queue_delay." + std::string(traffic_class_name(tc)), "ns",
        "time packets of this traffic class waited in output queues, all outputs", kPsPerNs);
  for (std::uint32_t i = 0; i < used_ports; ++i) {
    const std::string port = "port" + std::to_string(i);
    outputs_.push_back(
        std::make_unique<Egress>(port, port_cfg, link_cfg, out_part_, cfg.output_buffer, events,
                                 queue_name(*this, (port + ".wake").c_str()),
                                 Rng::for_component(seed, std::string(this->name()) + "." + port)));
    outputs_.back()->set_on_space([this, i] { output_has_space(i); });
    outputs_.back()->also_record_delay(&class_delay_);
    stats_.add_child(outputs_.back()->stats());
  }
}

void UaloeSwitch::connect(std::uint32_t port, Link& link, Link::Side side) {
  wires_.at(port) = Wire{&link, side};
  outputs_[port]->connect(link, side);
  link.attach(side, *this, port);
}

void UaloeSwitch::end_of_elaboration() {
  for (std::size_t p = 0; p < wires_.size(); ++p)
    if (!wires_[p].link)
      throw std::logic_error(std::string(name()) + ": port " + std::to_string(p) + " has no link");
}

void UaloeSwitch::set_route(AccelId dst, std::uint32_t first, std::uint32_t count) {
  if (count == 0 || first + count > outputs_.size())
    throw std::invalid_argument(std::string(name()) + ": route to ports beyond those in use");
  routes_[dst] = Route{first, count};
}

void UaloeSwitch::set_peer_buffer(std::uint32_t port, Bytes per_class) {
  outputs_.at(port)->set_peer_buffer(per_class);
}

std::uint32_t UaloeSwitch::pick_output(const Access& a) const {
  const Route& r = routes_[a.route_to];
  if (r.count == 0)
    throw std::logic_error(std::string(name()) + ": no route to accelerator " +
                           std::to_string(a.route_to));
  if (r.count == 1) return r.first;
  // Equal-cost ports: a hash of the flow (its two ends), so a flow keeps one path.
  const std::uint64_t from = a.kind == PacketKind::Response ? a.dst : a.src;
  const std::uint64_t flow = from << 32 | static_cast<std::uint64_t>(a.route_to) << 8 | a.plane;
  return r.first + static_cast<std::uint32_t>(mix64(flow) % r.count);
}

void UaloeSwitch::receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) {
  Access& a = access_of(gp);
  a.stamp(HopKind::Switch, head);
  const Routed r{static_cast<std::uint16_t>(port), static_cast<std::uint16_t>(pick_output(a)),
                 static_cast<std::uint8_t>(traffic_class(a)), static_cast<std::uint16_t>(tl_of(a))};
  arrivals_.push(head + in_part_, Arrival{&gp, r}, a.id);
}

// A credit return from the receiver on output `port`.
void UaloeSwitch::credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) {
  outputs_[port]->return_credits(tc, tl, at);
}

void UaloeSwitch::arrive(const Arrival& arr) {
  const Routed& r = arr.r;
  auto& q = inputs_[r.input][r.tc];
  if (q.empty() && outputs_[r.out]->has_space(static_cast<TrafficClass>(r.tc), r.tl)) {
    move(*arr.gp, r);
    return;
  }
  held_.inc();
  ++held_now_;
  q.push_back(Waiting{arr.gp, r, sim_now()});
  if (q.size() == 1) waiting_for_[r.out][r.tc].push_back(r.input);
}

void UaloeSwitch::move(tlm::tlm_generic_payload& gp, const Routed& r) {
  forwarded_.inc();
  // The packet leaves the input buffer: its credits go back upstream (the link adds flight).
  const Wire& w = wires_[r.input];
  w.link->return_credits(w.side, static_cast<TrafficClass>(r.tc), r.tl, sim_now());
  outputs_[r.out]->enqueue(gp, static_cast<TrafficClass>(r.tc), r.tl);
}

void UaloeSwitch::drain_input(std::uint32_t in, std::size_t tc) {
  auto& q = inputs_[in][tc];
  while (!q.empty()) {
    const Waiting w = q.front();
    if (!outputs_[w.r.out]->has_space(static_cast<TrafficClass>(w.r.tc), w.r.tl)) {
      waiting_for_[w.r.out][tc].push_back(in);
      return;
    }
    q.pop_front();
    --held_now_;
    input_wait_.record(sim_now() - w.since);
    move(*w.gp, w.r);
  }
}

void UaloeSwitch::output_has_space(std::uint32_t o) {
  if (held_now_ == 0) return;  // nothing is waiting for room anywhere
  // Moving a packet can free room elsewhere and call back in here: do one output at a time.
  space_pending_.push_back(o);
  if (in_space_callback_) return;
  in_space_callback_ = true;
  while (!space_pending_.empty()) {
    const std::uint32_t out = space_pending_.front();
    space_pending_.pop_front();
    // Inputs waiting for this output, in the order they started waiting (round-robin: an
    // input that still has packets for it goes to the back).
    for (std::size_t tc = 0; tc < kTrafficClasses; ++tc) {
      auto& waiting = waiting_for_[out][tc];
      std::size_t turns = waiting.size();
      while (turns-- > 0 && !waiting.empty()) {
        const std::uint32_t in = waiting.front();
        waiting.pop_front();
        drain_input(in, tc);
      }
    }
  }
  in_space_callback_ = false;
}

}  // namespace podsim
