#include "fabric/ualink_port.hpp"

#include <algorithm>
#include <string>

#include "fabric/traffic.hpp"
#include "sim/kernel/queue_arrival.hpp"

namespace podsim {

UalinkPort::UalinkPort(sc_core::sc_module_name name, const PortConfig& cfg, const LinkConfig& link,
                       AccelId self, Dispatcher& events, std::uint64_t seed)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      egress_("tx", cfg, link, cfg.tx_latency(), Bytes(0), events, queue_name(*this, "tx.wake"),
              Rng::for_component(seed, std::string(this->name()) + ".tx")),
      tx_queue_(events, queue_name(*this, "tx_queue"),
                [this](tlm::tlm_generic_payload* gp) { transmit(gp); }) {
  stats_.add_child(egress_.stats());
  from_gpuvm.register_nb_transport_fw(this, &UalinkPort::outgoing);
  from_mailbox.register_nb_transport_fw(this, &UalinkPort::outgoing_control);
  to_npa_mmu.register_nb_transport_bw(this, &UalinkPort::response_from_memory);
}

void UalinkPort::connect(Link& link, Link::Side side) {
  link_ = &link;
  side_ = side;
  egress_.connect(link, side);
  link.attach(side, *this, 0);
}

tlm::tlm_sync_enum UalinkPort::outgoing(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                        sc_core::sc_time& d) {
  return queue_arrival(tx_queue_, gp, d);
}

tlm::tlm_sync_enum UalinkPort::outgoing_control(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                                sc_core::sc_time& d) {
  return queue_arrival(tx_queue_, gp, d);
}

// Memory answered a remote request: it goes back to the requester as a response packet.
tlm::tlm_sync_enum UalinkPort::response_from_memory(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                                    sc_core::sc_time& d) {
  Access& a = access_of(gp);
  if (a.posted) {  // a posted store gets no response
    gp.release();
    return tlm::TLM_ACCEPTED;
  }
  a.kind = PacketKind::Response;
  a.route_to = a.src;
  return queue_arrival(tx_queue_, gp, d);
}

void UalinkPort::transmit(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  if (down_) {
    // Requests and control from a GPU that is down go nowhere; answers to other GPUs'
    // requests still leave, as errors (the access was not completed here).
    if (a.kind != PacketKind::Response) {
      dropped_.inc();
      gp->release();
      return;
    }
    a.status = AccessStatus::Unreachable;
  }
  a.stamp(HopKind::PortTx, sim_now());
  egress_.enqueue(*gp);
}

void UalinkPort::credits(std::uint32_t, TrafficClass tc, std::uint64_t tl, Time at) {
  egress_.return_credits(tc, tl, at);
}

// Our receive buffer frees the packet's space at `at`: the credits go back over the link.
void UalinkPort::return_credits(tlm::tlm_generic_payload& gp, Time at) {
  const Access& a = access_of(gp);
  link_->return_credits(side_, traffic_class(a), egress_.costs().tl_bytes(payload_bytes_on_wire(a)),
                        at);
}

void UalinkPort::receive(std::uint32_t, tlm::tlm_generic_payload& gp, Time head) {
  Access& a = access_of(gp);
  a.stamp(HopKind::PortRx, head);
  const WireCosts& costs = egress_.costs();
  const std::uint64_t tl = costs.tl_bytes(payload_bytes_on_wire(a));
  rx_packets_.inc();
  rx_tl_bytes_.inc(tl);
  // Whole packet in, then SerDes, FEC and the pipeline; then it leaves the receive buffer.
  const Time ready = head + costs.wire_time(tl) + cfg_.rx_latency();
  return_credits(gp, ready);
  sc_core::sc_time delay = to_sc(ready - sim_now());
  if (down_) {
    if (a.kind == PacketKind::Request) {
      a.status = AccessStatus::Unreachable;
      a.kind = PacketKind::Response;
      a.route_to = a.src;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      tx_queue_.push(ready, &gp, order_key(gp));
    } else {
      dropped_.inc();
      gp.release();
    }
    return;
  }
  switch (a.kind) {
    case PacketKind::Request: {
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      to_npa_mmu->nb_transport_fw(gp, ph, delay);
      break;
    }
    case PacketKind::Response: {
      tlm::tlm_phase ph = tlm::BEGIN_RESP;
      from_gpuvm->nb_transport_bw(gp, ph, delay);
      break;
    }
    case PacketKind::Control: {
      tlm::tlm_phase ph = tlm::BEGIN_REQ;
      to_mailbox[0]->nb_transport_fw(gp, ph, delay);
      break;
    }
  }
}

}  // namespace podsim
