// Link: a cable between two link ends (a GPU port and a switch, or two switches), both
// directions. A packet's head reaches the far end one flight time after it left; a credit
// return (on the backward path) takes the same flight back. The link adds nothing else.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "fabric/fabric_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/sc.hpp"

namespace podsim {

class Link final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_target_socket<Link, 32, PodProtocol> a_in{"a_in"};
  tlm_utils::simple_initiator_socket<Link, 32, PodProtocol> b_out{"b_out"};
  tlm_utils::simple_target_socket<Link, 32, PodProtocol> b_in{"b_in"};
  tlm_utils::simple_initiator_socket<Link, 32, PodProtocol> a_out{"a_out"};

  Link(sc_core::sc_module_name name, const LinkConfig& cfg);
  Time flight_time() const { return flight_; }
  const StatGroup& stat_group() const override { return stats_; }

 private:
  tlm::tlm_sync_enum forward_ab(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                sc_core::sc_time& d);
  tlm::tlm_sync_enum forward_ba(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                sc_core::sc_time& d);
  tlm::tlm_sync_enum credits_to_a(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                  sc_core::sc_time& d);
  tlm::tlm_sync_enum credits_to_b(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                  sc_core::sc_time& d);

  Time flight_;
  sc_core::sc_time flight_sc_;
  StatGroup stats_;
  Counter packets_ab_{stats_, "packets_a_to_b", "count", "packets carried from end A to end B"};
  Counter packets_ba_{stats_, "packets_b_to_a", "count", "packets carried from end B to end A"};
};

}  // namespace podsim
