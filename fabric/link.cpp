#include "fabric/link.hpp"

namespace podsim {

Link::Link(sc_core::sc_module_name name, const LinkConfig& cfg)
    : sc_module(name), flight_(cfg.flight_time()), flight_sc_(to_sc(flight_)) {
  a_in.register_nb_transport_fw(this, &Link::forward_ab);
  b_in.register_nb_transport_fw(this, &Link::forward_ba);
  b_out.register_nb_transport_bw(this, &Link::credits_to_a);
  a_out.register_nb_transport_bw(this, &Link::credits_to_b);
}

tlm::tlm_sync_enum Link::forward_ab(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                    sc_core::sc_time& d) {
  access_of(gp).stamp(HopKind::Link, sim_now() + from_sc(d));
  packets_ab_.inc();
  sc_core::sc_time delay = d + flight_sc_;
  return b_out->nb_transport_fw(gp, ph, delay);
}

tlm::tlm_sync_enum Link::forward_ba(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                    sc_core::sc_time& d) {
  access_of(gp).stamp(HopKind::Link, sim_now() + from_sc(d));
  packets_ba_.inc();
  sc_core::sc_time delay = d + flight_sc_;
  return a_out->nb_transport_fw(gp, ph, delay);
}

// End B freed buffer space for a packet that came from A: the credits fly back to A.
tlm::tlm_sync_enum Link::credits_to_a(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                      sc_core::sc_time& d) {
  sc_core::sc_time delay = d + flight_sc_;
  return a_in->nb_transport_bw(gp, ph, delay);
}

tlm::tlm_sync_enum Link::credits_to_b(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                      sc_core::sc_time& d) {
  sc_core::sc_time delay = d + flight_sc_;
  return b_in->nb_transport_bw(gp, ph, delay);
}

}  // namespace podsim
