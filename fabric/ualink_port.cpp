#include "fabric/ualink_port.hpp"

#include <algorithm>

#include "fabric/framing.hpp"

namespace podsim {

UalinkPort::UalinkPort(sc_core::sc_module_name name, const PortConfig& cfg, AccelId self)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      rate_(cfg.rate()),
      tx_utilisation_(stats_, "tx_utilisation", "ratio",
                      "fraction of simulated time the transmitter was sending", [this] {
                        double t = sim_now().as_seconds();
                        return t > 0 ? tx_busy_.as_seconds() / t : 0.0;
                      }) {
  from_gpuvm.register_nb_transport_fw(this, &UalinkPort::outgoing);
  from_mailbox.register_nb_transport_fw(this, &UalinkPort::outgoing);
  to_npa_mmu.register_nb_transport_bw(this, &UalinkPort::response_from_memory);
  rx.register_nb_transport_fw(this, &UalinkPort::incoming);
  spawn_method("transmit", tx_queue_.event(),
               [this] { tx_queue_.drain([this](tlm::tlm_generic_payload* gp) { transmit(gp); }); });
}

tlm::tlm_sync_enum UalinkPort::outgoing(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                        sc_core::sc_time& d) {
  tx_queue_.push(sim_now() + from_sc(d), &gp);
  return tlm::TLM_ACCEPTED;
}

// Memory answered a remote request: it goes back to the requester as a response packet.
tlm::tlm_sync_enum UalinkPort::response_from_memory(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                                    sc_core::sc_time& d) {
  Access& a = access_of(gp);
  a.kind = PacketKind::Response;
  a.route_to = a.src;
  tx_queue_.push(sim_now() + from_sc(d), &gp);
  return tlm::TLM_ACCEPTED;
}

void UalinkPort::transmit(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
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
  a.stamp(HopKind::PortTx, now);
  const Bytes wire = wire_bytes(a, cfg_);
  const Time start = std::max(now, tx_free_);
  const Time ser = rate_.transfer_time(wire);
  tx_free_ = start + ser;
  tx_busy_ += ser;
  tx_queue_delay_.record(start - now);
  tx_packets_.inc();
  tx_wire_bytes_.inc(wire.count());
  tx_payload_bytes_.inc(payload_bytes_on_wire(a));

  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(start + cfg_.tx_latency() - now);
  tx->nb_transport_fw(*gp, ph, d);
}

tlm::tlm_sync_enum UalinkPort::incoming(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                        sc_core::sc_time& d) {
  Access& a = access_of(gp);
  const Time head = sim_now() + from_sc(d);
  a.stamp(HopKind::PortRx, head);
  const Bytes wire = wire_bytes(a, cfg_);
  rx_packets_.inc();
  rx_wire_bytes_.inc(wire.count());
  // Whole packet in, then SerDes, FEC and the pipeline.
  const Time ready = head + rate_.transfer_time(wire) + cfg_.rx_latency();
  sc_core::sc_time delay = to_sc(ready - sim_now());
  if (down_) {
    if (a.kind == PacketKind::Request) {
      a.status = AccessStatus::Unreachable;
      a.kind = PacketKind::Response;
      a.route_to = a.src;
      gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
      tx_queue_.push(ready, &gp);
    } else {
      dropped_.inc();
      gp.release();
    }
    return tlm::TLM_ACCEPTED;
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
      to_mailbox->nb_transport_fw(gp, ph, delay);
      break;
    }
  }
  return tlm::TLM_ACCEPTED;
}

}  // namespace podsim
