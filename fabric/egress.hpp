// Egress: the transmit side of one end of a link (a GPU's UALink port, or a switch output).
//
//  - a FIFO queue per traffic class (optionally bounded: a switch's output queue);
//  - credit-based flow control: a packet leaves only when the receiver has advertised room
//    for it in that class; the receiver returns credits when it frees its buffer, and they
//    arrive one link flight later. Nothing is ever dropped: a full receiver stops the sender;
//  - control first; responses and requests by strict priority or in turns (port.arbitration),
//    FIFO within a class;
//  - serialization at the port's rate with DL framing (fabric/framing.hpp);
//  - link-level replay: each DL flit fails its CRC with the link's flit error probability; a
//    failure costs the link a go-back-N replay (replay_penalty) and delays what was in it.
//
// A packet arriving at an idle link with credits leaves at once; one arriving at a busy link,
// or one out of credits, waits for the egress's wake-up (a dispatcher timer, not a SystemC
// event), which sends what it can each time. Credit returns are applied lazily, when next
// needed.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <string>

#include "fabric/fabric_config.hpp"
#include "fabric/link.hpp"
#include "fabric/traffic.hpp"
#include "sim/core/fifo.hpp"
#include "sim/core/measured_busy.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/sc.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class Egress {
 public:
  // `tx_delay`: added to the head's departure (a GPU port's pipeline and SerDes; 0 for a
  // switch output, whose port-to-port latency includes it). `queue_capacity` bounds each
  // class's queue in TL bytes (0: unbounded).
  // `events` serves its wake-ups (a queue named `wake_name`).
  Egress(const std::string& name, const PortConfig& port, const LinkConfig& link, Time tx_delay,
         Bytes queue_capacity, Dispatcher& events, const std::string& wake_name, Rng rng);
  // Packets committed to the wire leave on end `side` of `link`.
  void connect(Link& link, Link::Side side) {
    link_ = &link;
    side_ = side;
  }
  Egress(const Egress&) = delete;
  Egress& operator=(const Egress&) = delete;

  // A fault: the link stops carrying anything until `until` (Link::stall_until).
  void stall_link(Time until) {
    if (link_) link_->stall_until(until);
  }
  // The receiver's buffer per class, in TL bytes: the credits we start with.
  void set_peer_buffer(Bytes per_class);
  bool has_space(TrafficClass tc, std::uint64_t tl) const;
  // Queues a packet now and sends it as soon as the link and credits allow (its class and TL
  // size, if the caller knows them already).
  void enqueue(tlm::tlm_generic_payload& gp);
  void enqueue(tlm::tlm_generic_payload& gp, TrafficClass tc, std::uint64_t tl);
  // Credits for `tl` bytes of class `tc` arrive at the sender at `at` (>= now).
  void return_credits(TrafficClass tc, std::uint64_t tl, Time at);
  // Called whenever queue space frees (a switch retries inputs waiting for this output).
  void set_on_space(std::function<void()> fn) { on_space_ = std::move(fn); }
  // Also records every packet's queueing delay into its class's distribution in `by_class`
  // (a switch's all-outputs figures by class).
  void also_record_delay(
      const std::array<std::unique_ptr<Distribution>, kTrafficClasses>* by_class) {
    also_class_delay_ = by_class;
  }
  const Distribution& queue_delay() const { return queue_delay_; }

  const StatGroup& stats() const { return stats_; }
  std::uint64_t queued_packets() const { return queued_; }
  // Since when it has had packets queued and sent none (Time::max() when none is queued).
  Time waiting_since() const { return queued_ > 0 ? waiting_since_ : Time::max(); }
  // Why its queued packets are not leaving, in words (the link stalled, or which classes
  // lack the credits their first packet needs).
  std::string why_waiting() const;
  const std::string& name() const { return name_; }
  const WireCosts& costs() const { return costs_; }
  std::uint64_t wire_bytes_sent() const { return wire_bytes_.value(); }
  std::uint64_t payload_bytes_sent() const { return payload_bytes_.value(); }
  std::uint64_t wire_bytes_sent(TrafficClass tc) const {
    return class_wire_bytes_[static_cast<std::size_t>(tc)];
  }

 private:
  // Queue entries never split across two cache lines (aligned to their size, as their
  // buffers are).
  struct alignas(32) Queued {
    tlm::tlm_generic_payload* gp;
    std::uint64_t tl;
    Time since;
  };
  struct alignas(16) CreditReturn {
    Time at;
    std::uint32_t tl;  // one packet's TL bytes
    std::uint8_t tc;
  };
  static_assert(sizeof(CreditReturn) == 16);
  void pump();
  void absorb_credits(Time now);
  void commit(std::size_t tc, Time now);

  // The stats register with stats_, so it comes first; then what sending a packet touches,
  // together (in a big pod an egress has left the host's caches by the time its next packet
  // comes, and every line of it touched is a miss); what only setup and reports read last.
  StatGroup stats_;
  Link* link_ = nullptr;
  Link::Side side_ = Link::A;
  Arbitration arbitration_;
  std::size_t next_data_class_ = 1;  // round robin: the data class whose turn it is
  std::uint64_t capacity_;
  double flit_error_;
  Time tx_delay_;
  Time replay_penalty_;
  WireCosts costs_;  // shared with every port that costs the same
  Time free_at_;
  Time busy_;
  Time stalled_since_ = Time::max();
  Time waiting_since_;         // the last send, or the arrival that ended an empty spell
  std::uint64_t tl_sent_ = 0;  // for DL flit boundaries
  std::uint64_t queued_ = 0;   // packets, all classes
  std::array<std::uint64_t, kTrafficClasses> queued_bytes_{};
  std::array<std::int64_t, kTrafficClasses> credits_{};
  std::array<std::uint64_t, kTrafficClasses> class_wire_bytes_{};
  std::array<Fifo<Queued>, kTrafficClasses> queues_;
  Fifo<CreditReturn> pending_credits_;  // in arrival-time order
  Counter packets_{stats_, "packets", "count", "packets sent"};
  Counter tl_bytes_{stats_, "tl_bytes", "bytes", "transaction-layer bytes sent"};
  Counter wire_bytes_{stats_, "wire_bytes", "bytes",
                      "bytes of wire time used, DL framing and Ethernet overhead included"};
  Counter payload_bytes_{stats_, "payload_bytes", "bytes", "data bytes sent"};
  Counter replays_{stats_, "replays", "count", "DL flits that failed their CRC and were replayed"};
  Counter replay_time_{stats_, "replay_time_ps", "ps", "link time lost to replays"};
  Counter credit_stalls_{stats_, "credit_stalls", "count",
                         "times a queued packet had to wait for the receiver's credits"};
  Counter credit_stall_time_{stats_, "credit_stall_time_ps", "ps",
                             "time spent with packets queued but no credits to send them"};
  Distribution queue_delay_{stats_, "queue_delay", "ns",
                            "time from a packet's arrival at the queue to its transmission",
                            kPsPerNs};
  Distribution occupancy_{stats_, "queue_occupancy", "packets",
                          "packets already queued when a packet arrives (arrival-sampled)"};
  Formula utilisation_;
  Formula efficiency_;
  MeasuredBusy measured_;
  Timer wake_;
  std::function<void()> on_space_;
  const std::array<std::unique_ptr<Distribution>, kTrafficClasses>* also_class_delay_ = nullptr;
  Rng rng_;
  std::string name_;
  PortConfig port_;
};

}  // namespace podsim
