// UaloeSwitch: an N-port UALoE switch, output-queued.
//
// A packet's head arrives on an input; the port-to-port latency is spent in two parts: the
// output port's transmit pipeline and SerDes as the packet leaves (as a GPU port's), and the
// rest before it joins the queue of its output (chosen by destination accelerator ID; among
// equal-cost ports by a hash of the flow), per traffic class. Each output is an Egress: strict
// priority between classes, FIFO within, cut-through (the head leaves as soon as the output is
// free), credit-based flow control toward the next hop, serialization with DL framing and
// link-level replay.
//
// Why output queues: a shared-buffer Ethernet-class switch (what UALoE runs on) behaves as an
// output-queued switch; it has no head-of-line blocking while queues have room, and it is
// what the M/D/1 validation analyses. Buffers are finite: when an output's queue for a class
// is full, packets wait in their input's buffer (FIFO per input and class; inputs waiting for
// an output are served in turn, round-robin), the input's credits are not returned, and the
// sender upstream stops: back-pressure, never loss.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "fabric/egress.hpp"
#include "fabric/fabric_config.hpp"
#include "fabric/link.hpp"
#include "sim/core/fifo.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class UaloeSwitch final : public sc_core::sc_module, public HasStats, public LinkEnd {
 public:
  UaloeSwitch(sc_core::sc_module_name name, const SwitchConfig& cfg, const PortConfig& port_cfg,
              const LinkConfig& link_cfg, std::uint32_t used_ports, Dispatcher& events,
              std::uint64_t seed);

  // Port `port` is end `side` of `link` (packets arrive on it and leave through it).
  void connect(std::uint32_t port, Link& link, Link::Side side);
  // Packets for accelerator `dst` leave through one of ports [first, first + count).
  void set_route(AccelId dst, std::uint32_t first, std::uint32_t count = 1);
  // The receiver on port `port` has `per_class` bytes of buffer per traffic class.
  void set_peer_buffer(std::uint32_t port, Bytes per_class);
  const Egress& output(std::uint32_t port) const { return *outputs_[port]; }
  std::uint32_t outputs() const { return static_cast<std::uint32_t>(outputs_.size()); }
  const Distribution& output_queue_delay() const { return queue_delay_; }
  // The run is over: the all-outputs queueing delay is gathered from the outputs' own (the
  // same samples, not recorded twice on the hot path). Before stats are read; once (later
  // calls change nothing).
  void finalize() {
    if (finalized_) return;
    finalized_ = true;
    for (const auto& o : outputs_)
      queue_delay_.merge(o->queue_delay());
  }
  const Distribution& output_queue_delay(TrafficClass tc) const {
    return *class_delay_[static_cast<std::size_t>(tc)];
  }

  const StatGroup& stat_group() const override { return stats_; }

 private:
  bool finalized_ = false;
  struct Route {
    std::uint32_t first = UINT32_MAX, count = 0;
  };
  // What the switch needs of a packet, read once as its head comes in (while it is in the
  // cache): where it goes, its traffic class and its size.
  struct Routed {
    std::uint16_t input, out;
    std::uint8_t tc;
    std::uint16_t tl;
  };
  struct Waiting {  // a packet held in its input buffer
    tlm::tlm_generic_payload* gp;
    Routed r;
    Time since;
  };
  struct Arrival {
    tlm::tlm_generic_payload* gp;
    Routed r;
  };
  struct Wire {  // what each port is attached to
    Link* link = nullptr;
    Link::Side side = Link::A;
  };
  // LinkEnd
  void receive(std::uint32_t port, tlm::tlm_generic_payload& gp, Time head) override;
  void credits(std::uint32_t port, TrafficClass tc, std::uint64_t tl, Time at) override;
  void end_of_elaboration() override;
  void arrive(const Arrival& a);
  static void fetch_packet(const Arrival& a) { prefetch_packet(a.gp); }
  std::uint32_t pick_output(const Access& a) const;
  // Moves input `in`'s waiting packets of class `tc` into their output queues while they fit.
  void drain_input(std::uint32_t in, std::size_t tc);
  void move(tlm::tlm_generic_payload& gp, const Routed& r);
  void output_has_space(std::uint32_t out);
  std::uint64_t tl_of(const Access& a) const { return costs_.tl_bytes(payload_bytes_on_wire(a)); }

  SwitchConfig cfg_;
  PortConfig port_cfg_;
  Time out_part_;  // of the latency: the output port's pipeline and SerDes (at most all of it)
  Time in_part_;   // the rest: input to output queue
  WireCosts costs_;
  std::vector<Route> routes_;
  std::vector<Wire> wires_;  // by port
  std::vector<std::unique_ptr<Egress>> outputs_;
  // per input, per class: packets waiting for room in their output queue
  std::vector<std::array<Fifo<Waiting>, kTrafficClasses>> inputs_;
  std::uint64_t held_now_ = 0;  // packets in input buffers, all inputs
  // per output, per class: inputs whose first waiting packet wants this output, in turn
  std::vector<std::array<Fifo<std::uint32_t>, kTrafficClasses>> waiting_for_;
  TimedQueue<Arrival> arrivals_;
  Fifo<std::uint32_t> space_pending_;
  bool in_space_callback_ = false;

  StatGroup stats_;
  Counter forwarded_{stats_, "packets", "count", "packets forwarded"};
  Counter held_{stats_, "input_holds", "count",
                "packets held in their input buffer because their output queue was full"};
  Distribution input_wait_{stats_, "input_wait", "ns",
                           "time held packets waited in their input buffer", kPsPerNs};
  Distribution queue_delay_{stats_, "output_queue_delay", "ns",
                            "time packets waited in output queues, all outputs", kPsPerNs};
  std::array<std::unique_ptr<Distribution>, kTrafficClasses> class_delay_;
};

}  // namespace podsim
