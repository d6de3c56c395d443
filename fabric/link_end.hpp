// What crosses the fabric, said explicitly: a link end (a GPU's UALink port, a switch port)
// receives packets, each with the time its head arrives, and credits, by traffic class, for
// buffer space its far end has freed. Links carry both (fabric/link.hpp); nothing on the
// fabric borrows TLM phases.
#pragma once

#include <cstdint>

#include "fabric/traffic.hpp"
#include "sim/core/units.hpp"

namespace tlm {
class tlm_generic_payload;
}

namespace podsim {

class LinkEnd {
 public:
  virtual ~LinkEnd() = default;
  // A packet's head reaches this end's port `port` at `head` (not before now).
  virtual void receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) = 0;
  // The same packet, handed over later than it was sent (at `sent`) because another rank sent
  // it (a pod split across ranks): the end must act as it would have at `sent`.
  virtual void receive_sent(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head,
                            Time sent) {
    (void)sent;
    receive(port, gp, head);
  }
  // The far end of port `port` freed room for `tl` TL bytes of class `tc`; the credits reach
  // this end at `at`.
  virtual void credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) = 0;
};

}  // namespace podsim
