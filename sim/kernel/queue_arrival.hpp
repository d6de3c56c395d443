// How a module takes a packet handed to it through a TLM call: queued for the time it arrives
// (now plus the call's delay), among packets due at the same time in access-ID order, and
// accepted. Every nb_transport of a module that queues its input is this one line.
#pragma once

#include <tlm>

#include "sim/kernel/access.hpp"
#include "sim/kernel/sc.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

// `item`: what the queue holds for the packet (the packet itself, or it with its input).
template <class Item>
tlm::tlm_sync_enum queue_arrival(TimedQueue<Item>& queue, tlm::tlm_generic_payload& gp,
                                 const sc_core::sc_time& delay, const Item& item) {
  queue.push(sim_now() + from_sc(delay), item, order_key(gp));
  return tlm::TLM_ACCEPTED;
}

inline tlm::tlm_sync_enum queue_arrival(TimedQueue<tlm::tlm_generic_payload*>& queue,
                                        tlm::tlm_generic_payload& gp,
                                        const sc_core::sc_time& delay) {
  return queue_arrival(queue, gp, delay, &gp);
}

}  // namespace podsim
