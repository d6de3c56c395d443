// Link: a cable between two link ends (a GPU port and a switch port, or two switch ports),
// both directions. What it carries is said explicitly (fabric/link_end.hpp): a packet with the
// time its head leaves, and credits by traffic class. A packet's head reaches the far end one
// flight time after it left. Credits ride data-link flits: a return reaches the other end one
// flight plus both ends' data-link processing after it was made. The link adds nothing else;
// it counts what it carried and stamps a packet as it goes onto the wire.
#pragma once

#include <array>

#include "fabric/fabric_config.hpp"
#include "fabric/link_end.hpp"
#include "sim/core/stats.hpp"
#include "sim/core/timed_value.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/sc.hpp"

namespace podsim {

// Where a cut link sends what reaches its far end, when that end is simulated by another rank
// (a pod split across ranks: docs/parallel.md). `link` is the ID the link was cut with; `to`
// the side (0: A, 1: B) the packet or credits are for.
class CutSink {
 public:
  virtual ~CutSink() = default;
  virtual void packet(std::uint32_t link, std::uint8_t to, tlm::tlm_generic_payload& gp,
                      Time head) = 0;
  virtual void credits(std::uint32_t link, std::uint8_t to, TrafficClass tc, std::uint64_t tl,
                       Time at) = 0;
};

class Link final : public sc_core::sc_module, public HasStats {
 public:
  enum Side : std::uint8_t { A = 0, B = 1 };

  // `credit_processing`: what a credit return costs beyond the flight, in the data-link flits
  // that carry it (the sender's transmit pipeline and SerDes, the receiver's SerDes, FEC and
  // pipeline).
  Link(sc_core::sc_module_name name, const LinkConfig& cfg, Time credit_processing = Time{});
  // End `side` of the link is port `port` of `end`.
  void attach(Side side, LinkEnd& end, std::uint32_t port);
  Time flight_time() const { return flight_; }
  // From a credit return's `at` to its arrival at the other end.
  Time credit_delay() const { return credit_delay_; }

  // A packet from end `from` leaves with its head at `departs`.
  void send(Side from, tlm::tlm_generic_payload& gp, Time departs) {
    access_of(gp).stamp(HopKind::Link, departs);
    (from == A ? packets_ab_ : packets_ba_).inc();
    const End& to = ends_[1 - from];
    if (remote_[1 - from]) [[unlikely]]
      return cut_->packet(id_, static_cast<std::uint8_t>(1 - from), gp, departs + flight_);
    to.end->receive(to.port, gp, departs + flight_);
  }
  // End `from` freed buffer space for `tl` TL bytes of class `tc` at `at`: the credits go to
  // the other end in a data-link flit (credit_delay later).
  void return_credits(Side from, TrafficClass tc, std::uint64_t tl, Time at) {
    return_credits(from, tc, tl, at, stalled_until_.now());
  }
  // The same with the link stalled until `stalled_until` (stalled_until_for a packet another
  // rank sent).
  void return_credits(Side from, TrafficClass tc, std::uint64_t tl, Time at, Time stalled_until) {
    if (stalled_until > at) {  // they ride the first flit after the stall
      if (stalled_until == Time::max()) return;
      at = stalled_until;
    }
    const End& to = ends_[1 - from];
    if (remote_[1 - from]) [[unlikely]]
      return cut_->credits(id_, static_cast<std::uint8_t>(1 - from), tc, tl, at + credit_delay_);
    to.end->credits(to.port, tc, tl, at + credit_delay_);
  }

  // Partitioned pods: end `remote` is simulated by another rank; what reaches it goes to
  // `sink`, tagged `id`.
  void cut(Side remote, CutSink& sink, std::uint32_t id) {
    cut_ = &sink;
    remote_[remote] = true;
    id_ = id;
  }
  // What another rank sent across this link (at `sent`), handed to end `to` as send and
  // return_credits would have (`head` and `at` already include the flight).
  void deliver(Side to, tlm::tlm_generic_payload& gp, Time head, Time sent) {
    ends_[to].end->receive_sent(ends_[to].port, gp, head, sent);
  }
  void deliver_credits(Side to, TrafficClass tc, std::uint64_t tl, Time at) {
    ends_[to].end->credits(ends_[to].port, tc, tl, at);
  }

  // A fault: the link carries nothing, either way, until `until` (Time::max(): for good).
  // Senders hold their packets (nothing is lost); credit returns wait for the link too.
  void stall_until(Time until) {
    stalled_until_.set(sim_now(), std::max(stalled_until_.now(), until));
  }
  Time stalled_until() const { return stalled_until_.now(); }
  // What stalled_until() was when a packet was sent at `sent` (TimedValue::before): the
  // credits the end a split run hands a packet to later returns as it takes it in see the
  // link as it was then.
  Time stalled_until_for(Time sent) const { return stalled_until_.before(sent); }

  const StatGroup& stat_group() const override { return stats_; }

 private:
  void end_of_elaboration() override;

  struct End {
    LinkEnd* end = nullptr;
    std::uint32_t port = 0;
  };
  Time flight_;
  Time credit_delay_;
  std::array<End, 2> ends_{};
  TimedValue<Time> stalled_until_;
  CutSink* cut_ = nullptr;        // set with remote_
  std::array<bool, 2> remote_{};  // end simulated by another rank
  std::uint32_t id_ = 0;
  StatGroup stats_;
  Counter packets_ab_{stats_, "packets_a_to_b", "count", "packets carried from end A to end B"};
  Counter packets_ba_{stats_, "packets_b_to_a", "count", "packets carried from end B to end A"};
};

}  // namespace podsim
