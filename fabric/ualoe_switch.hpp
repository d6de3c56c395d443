// UaloeSwitch: an N-port UALoE switch. Routes each packet by its destination accelerator ID
// to an output port; the head leaves `latency` after it arrived (cut-through) or, if the
// output is still sending an earlier packet, as soon as the output is free (output queueing,
// FIFO per output).
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <memory>
#include <vector>

#include "fabric/fabric_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class UaloeSwitch final : public sc_core::sc_module, public HasStats {
 public:
  // Port i is in[i] (packets arriving) and out[i] (packets leaving), bound in port order.
  tlm_utils::multi_passthrough_target_socket<UaloeSwitch, 32, PodProtocol> in{"in"};
  tlm_utils::multi_passthrough_initiator_socket<UaloeSwitch, 32, PodProtocol> out{"out"};

  UaloeSwitch(sc_core::sc_module_name name, const SwitchConfig& cfg, const PortConfig& port_cfg);

  // Packets for accelerator `dst` leave through `port`.
  void set_route(AccelId dst, std::uint32_t port);
  std::uint32_t route(AccelId dst) const { return routes_[dst]; }
  static constexpr std::uint32_t kNoRoute = UINT32_MAX;

  const StatGroup& stat_group() const override { return stats_; }

 private:
  struct Arrival {
    tlm::tlm_generic_payload* gp;
    int in_port;
  };
  struct Output {
    explicit Output(std::uint32_t i);
    StatGroup stats;
    Counter packets{stats, "packets", "count", "packets sent from this port"};
    Counter wire_bytes{stats, "wire_bytes", "bytes", "bytes sent from this port"};
    Time free_at;
    Time busy;
  };
  tlm::tlm_sync_enum fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  void forward(const Arrival& a);

  SwitchConfig cfg_;
  PortConfig port_cfg_;
  Bandwidth rate_;
  std::vector<std::uint32_t> routes_;
  std::vector<std::unique_ptr<Output>> outputs_;
  TimedQueue<Arrival> arrivals_;

  StatGroup stats_;
  Counter forwarded_{stats_, "packets", "count", "packets forwarded"};
  Distribution queue_delay_{stats_, "output_queue_delay", "ns",
                            "time a packet's head waited for its output port beyond the "
                            "port-to-port latency",
                            kPsPerNs};
};

}  // namespace podsim
