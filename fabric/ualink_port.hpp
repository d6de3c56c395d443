// UalinkPort: one GPU's UALink port (a station's lanes). Transmit side: packets from GpuVm
// (remote requests), the NPA MMU (responses to remote requesters) and the mailbox (control)
// queue for the link, which sends one packet at a time at the port's rate after the TL/DL
// pipeline and SerDes. Receive side: a packet is whole one serialization time after its head
// arrives; after SerDes, FEC and pipeline it goes to the NPA MMU (a request for our memory),
// back to GpuVm (a response to one of ours) or to the mailbox (a control command).
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "fabric/fabric_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class UalinkPort final : public sc_core::sc_module, public HasStats {
 public:
  // GPU side
  tlm_utils::simple_target_socket<UalinkPort, 32, PodProtocol> from_gpuvm{"from_gpuvm"};
  tlm_utils::simple_target_socket<UalinkPort, 32, PodProtocol> from_mailbox{"from_mailbox"};
  tlm_utils::simple_initiator_socket<UalinkPort, 32, PodProtocol> to_npa_mmu{"to_npa_mmu"};
  tlm_utils::simple_initiator_socket<UalinkPort, 32, PodProtocol> to_mailbox{"to_mailbox"};
  // fabric side
  tlm_utils::simple_initiator_socket<UalinkPort, 32, PodProtocol> tx{"tx"};
  tlm_utils::simple_target_socket<UalinkPort, 32, PodProtocol> rx{"rx"};

  UalinkPort(sc_core::sc_module_name name, const PortConfig& cfg, AccelId self);

  // A port that is down (its GPU is being reset) sends and takes nothing, except that it
  // answers incoming data requests with an error, as the switch would for a dead link.
  void set_down(bool down) { down_ = down; }
  bool down() const { return down_; }

  const StatGroup& stat_group() const override { return stats_; }
  const PortConfig& config() const { return cfg_; }

 private:
  tlm::tlm_sync_enum outgoing(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d);
  tlm::tlm_sync_enum response_from_memory(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                          sc_core::sc_time& d);
  tlm::tlm_sync_enum incoming(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d);
  void transmit(tlm::tlm_generic_payload* gp);

  PortConfig cfg_;
  AccelId self_;
  Bandwidth rate_;
  bool down_ = false;
  Time tx_free_;
  Time tx_busy_;
  TimedQueue<tlm::tlm_generic_payload*> tx_queue_;

  StatGroup stats_;
  Counter tx_packets_{stats_, "tx_packets", "count", "packets transmitted"};
  Counter tx_wire_bytes_{stats_, "tx_wire_bytes", "bytes", "bytes transmitted, headers included"};
  Counter tx_payload_bytes_{stats_, "tx_payload_bytes", "bytes", "data bytes transmitted"};
  Counter rx_packets_{stats_, "rx_packets", "count", "packets received"};
  Counter rx_wire_bytes_{stats_, "rx_wire_bytes", "bytes", "bytes received, headers included"};
  Counter dropped_{stats_, "dropped_while_down", "count",
                   "packets dropped because the port was down"};
  Distribution tx_queue_delay_{stats_, "tx_queue_delay", "ns",
                               "time a packet waited for the transmitter", kPsPerNs};
  Formula tx_utilisation_;
};

}  // namespace podsim
