// UalinkPort: one of a GPU's UALink ports (one per switch plane). Transmit side: packets from
// GpuVm (remote requests), the NPA MMU (responses to remote requesters) and the mailbox (its
// ring, pointer and doorbell writes) go out through an Egress (traffic classes, credits,
// serialization after the TL/DL pipeline and SerDes, replay) onto its link. Receive side: a
// packet is whole one wire time after its head arrives; after SerDes, FEC and the pipeline it
// goes to the NPA MMU (a request for our memory), back to GpuVm (a response to one of ours)
// or to the mailbox (a doorbell, or a control packet of the what-if control class), and its
// buffer space is returned to the sender as credits. Inside the GPU it speaks TLM-2.0; toward
// the fabric it is a LinkEnd.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "fabric/egress.hpp"
#include "fabric/fabric_config.hpp"
#include "sim/core/stats.hpp"
#include "sim/core/timed_value.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class UalinkPort final : public sc_core::sc_module, public HasStats, public LinkEnd {
 public:
  // GPU side
  tlm_utils::simple_target_socket<UalinkPort> from_gpuvm{"from_gpuvm"};
  tlm_utils::simple_initiator_socket<UalinkPort> to_npa_mmu{"to_npa_mmu"};
  // The firmware mailbox.
  tlm_utils::multi_passthrough_target_socket<UalinkPort, 32, tlm::tlm_base_protocol_types, 1,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      from_mailbox{"from_mailbox"};
  tlm_utils::multi_passthrough_initiator_socket<UalinkPort, 32, tlm::tlm_base_protocol_types, 1,
                                                sc_core::SC_ZERO_OR_MORE_BOUND>
      to_mailbox{"to_mailbox"};
  UalinkPort(sc_core::sc_module_name name, const PortConfig& cfg, const LinkConfig& link,
             Dispatcher& events, std::uint64_t seed);

  // The fabric side: end `side` of `link`.
  void connect(Link& link, Link::Side side);
  // The receiver at the far end has `per_class` bytes of buffer per traffic class.
  void set_peer_buffer(Bytes per_class) { egress_.set_peer_buffer(per_class); }
  // A port that is down (its GPU is being reset) sends and takes nothing, except that it
  // answers incoming data requests with an error, as the switch would for a dead link.
  void set_down(bool down) { down_.set(sim_now(), down); }
  bool down() const { return down_.now(); }
  const Egress& egress() const { return egress_; }
  // A fault: this port's link carries nothing, either way, until `until`.
  void stall_link(Time until) { egress_.stall_link(until); }

  const StatGroup& stat_group() const override { return stats_; }
  const PortConfig& config() const { return cfg_; }

 private:
  tlm::tlm_sync_enum outgoing(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d);
  tlm::tlm_sync_enum outgoing_control(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                      sc_core::sc_time& d);
  tlm::tlm_sync_enum response_from_memory(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                          sc_core::sc_time& d);
  tlm::tlm_sync_enum from_mailbox_bw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                     sc_core::sc_time& d);
  // Memory's answer to a remote request leaves as a response packet (posted stores: none).
  void answer_remote(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d);
  // LinkEnd
  void receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) override;
  void receive_sent(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head,
                    Time sent) override;
  void credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) override;
  void transmit(tlm::tlm_generic_payload* gp);
  // The packet's buffer space is free at `at`: its credits go back over the link, stalled as
  // it was until `link_stalled_until`.
  void return_credits(tlm::tlm_generic_payload& gp, Time at, Time link_stalled_until);

  PortConfig cfg_;
  Link* link_ = nullptr;
  Link::Side side_ = Link::A;
  // Whether it is down, and when it went down or up (for a packet sent at a time:
  // TimedValue::before).
  TimedValue<bool> down_{false};
  // A packet whose head arrives at `head`, taken in as if the port were `down` (or not) and
  // its link stalled until `link_stalled_until`: as they are now, or as they were when the
  // packet was sent (one another rank sent: receive_sent).
  void receive_as(tlm::tlm_generic_payload& gp, Time head, bool down, Time link_stalled_until);
  StatGroup stats_;
  Egress egress_;
  TimedQueue<tlm::tlm_generic_payload*> tx_queue_;
  ResponseLane to_gpuvm_;     // from_gpuvm's response side
  RequestLane npa_mmu_lane_;  // to_npa_mmu's request side
  RequestLane mailbox_lane_;  // to_mailbox's request side (commands: posted)

  Counter rx_packets_{stats_, "rx_packets", "count", "packets received"};
  Counter rx_tl_bytes_{stats_, "rx_tl_bytes", "bytes", "transaction-layer bytes received"};
  Counter dropped_{stats_, "dropped_while_down", "count",
                   "packets dropped because the port was down"};
  Counter refused_{stats_, "refused_while_down", "count",
                   "requests that came in while the port was down, answered with an error "
                   "(posted ones, the driver's control writes among them, are lost)"};
};

}  // namespace podsim
