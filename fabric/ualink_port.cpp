#include "fabric/ualink_port.hpp"

#include <algorithm>
#include <string>

#include "fabric/traffic.hpp"

namespace podsim {

UalinkPort::UalinkPort(sc_core::sc_module_name name, const PortConfig& cfg, const LinkConfig& link,
                       Dispatcher& events, std::uint64_t seed)
    : sc_module(name),
      cfg_(cfg),
      egress_("tx", cfg, link, cfg.tx_latency(), Bytes(0), events, queue_name(*this, "tx.wake"),
              Rng::for_component(seed, std::string(this->name()) + ".tx")),
      tx_queue_(events, queue_name(*this, "tx_queue"),
                [this](tlm::tlm_generic_payload* gp) { transmit(gp); }),
      to_gpuvm_([this] { return from_gpuvm.operator->(); }),
      npa_mmu_lane_([this] { return to_npa_mmu.operator->(); },
                    [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
                      answer_remote(gp, d);
                    }),
      mailbox_lane_([this] { return to_mailbox[0]; },
                    [](tlm::tlm_generic_payload& gp, const sc_core::sc_time&) { gp.release(); }) {
  stats_.add_child(egress_.stats());
  tx_queue_.fetch_ahead<&prefetch_packet_item>();
  from_gpuvm.register_nb_transport_fw(this, &UalinkPort::outgoing);
  from_mailbox.register_nb_transport_fw(this, &UalinkPort::outgoing_control);
  to_npa_mmu.register_nb_transport_bw(this, &UalinkPort::response_from_memory);
  to_mailbox.register_nb_transport_bw(this, &UalinkPort::from_mailbox_bw);
}

void UalinkPort::connect(Link& link, Link::Side side) {
  link_ = &link;
  side_ = side;
  egress_.connect(link, side);
  link.attach(side, *this, 0);
}

tlm::tlm_sync_enum UalinkPort::outgoing(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                        sc_core::sc_time& d) {
  if (ph == tlm::BEGIN_REQ) [[likely]]
    return accept_request(tx_queue_, gp, ph, d);
  if (ph == tlm::END_RESP) return to_gpuvm_.end_response(gp);
  phase_error(name(), ph);
}

tlm::tlm_sync_enum UalinkPort::outgoing_control(int, tlm::tlm_generic_payload& gp,
                                                tlm::tlm_phase& ph, sc_core::sc_time& d) {
  if (ph != tlm::BEGIN_REQ) phase_error(name(), ph);
  return accept_request(tx_queue_, gp, ph, d);
}

tlm::tlm_sync_enum UalinkPort::response_from_memory(tlm::tlm_generic_payload& gp,
                                                    tlm::tlm_phase& ph, sc_core::sc_time& d) {
  if (ph == tlm::END_REQ) return npa_mmu_lane_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  npa_mmu_lane_.begin_response(gp);
  answer_remote(gp, d);
  return tlm::TLM_COMPLETED;
}

void UalinkPort::answer_remote(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
  Access& a = access_of(gp);
  if (a.posted) {  // a posted store gets no response
    gp.release();
    return;
  }
  a.kind = PacketKind::Response;
  a.route_to = a.src;
  tx_queue_.push(sim_now() + from_sc(d), &gp, order_key(gp));
}

// Commands get no answer; a mailbox that answers anyway ends the transaction here.
tlm::tlm_sync_enum UalinkPort::from_mailbox_bw(int, tlm::tlm_generic_payload& gp,
                                               tlm::tlm_phase& ph, sc_core::sc_time&) {
  if (ph == tlm::END_REQ) return mailbox_lane_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  mailbox_lane_.begin_response(gp);
  gp.release();
  return tlm::TLM_COMPLETED;
}

void UalinkPort::transmit(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  if (down_.now()) {
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
void UalinkPort::return_credits(tlm::tlm_generic_payload& gp, Time at, Time link_stalled_until) {
  const Access& a = access_of(gp);
  link_->return_credits(side_, traffic_class(a), egress_.costs().tl_bytes(payload_bytes_on_wire(a)),
                        at, link_stalled_until);
}

void UalinkPort::receive(std::uint32_t, tlm::tlm_generic_payload& gp, Time head) {
  receive_as(gp, head, down_.now(), link_->stalled_until());
}

void UalinkPort::receive_sent(std::uint32_t, tlm::tlm_generic_payload& gp, Time head, Time sent) {
  receive_as(gp, head, down_.before(sent), link_->stalled_until_for(sent));
}

void UalinkPort::receive_as(tlm::tlm_generic_payload& gp, Time head, bool down,
                            Time link_stalled_until) {
  Access& a = access_of(gp);
  a.stamp(HopKind::PortRx, head);
  const WireCosts& costs = egress_.costs();
  const std::uint64_t tl = costs.tl_bytes(payload_bytes_on_wire(a));
  rx_packets_.inc();
  rx_tl_bytes_.inc(tl);
  // Whole packet in, then SerDes, FEC and the pipeline; then it leaves the receive buffer.
  const Time ready = head + costs.wire_time(tl) + cfg_.rx_latency();
  return_credits(gp, ready, link_stalled_until);
  sc_core::sc_time delay = to_sc(ready - sim_now());
  if (down) {
    if (a.kind == PacketKind::Request) {
      refused_.inc();
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
    case PacketKind::Request:  // a posted store's transaction ends when the NPA MMU takes it
      if (a.mailbox == MailboxWrite::Doorbell) [[unlikely]] {  // for the firmware, not memory
        mailbox_lane_.send(gp, delay);
        break;
      }
      npa_mmu_lane_.send(gp, delay);
      break;
    case PacketKind::Response:
      if (a.posted) {  // the error a down GPU sent for a posted store: nobody waits for it
        gp.release();
        break;
      }
      to_gpuvm_.respond(gp, delay);
      break;
    case PacketKind::Control:  // its transaction ends when the mailbox takes it
      mailbox_lane_.send(gp, delay);
      break;
  }
}

}  // namespace podsim
