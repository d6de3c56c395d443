// The TLM-2.0 base protocol (IEEE 1666-2011, clause 15) as podsim's modules speak it inside a
// GPU: between the compute agent, GpuVm, the UALink ports' GPU side, the NPA MMU, VRAM and the
// firmware mailbox. (The fabric between ports and switches is not TLM: fabric/link_end.hpp.)
//
// - A request goes forward with BEGIN_REQ. podsim's targets accept at once: TLM_UPDATED with
//   END_REQ, and they queue the request for the time it arrives (now plus the call's delay).
// - The answer comes back with BEGIN_RESP on the backward path; podsim's initiators take it at
//   once (TLM_COMPLETED).
// - A request that gets no answer — a posted store, a control command (ring write, doorbell) —
//   is complete when its target accepts it: the target returns TLM_COMPLETED with
//   TLM_OK_RESPONSE and takes its own reference to the payload (the pool's reference count),
//   and the initiator drops its own. The next hop is a new transaction on the same payload.
// - Towards components that are not podsim's (a b_transport memory behind a simple socket's
//   adapter, a protocol checker), the lanes below keep the rules podsim's own targets never
//   test: a BEGIN_REQ waits for the previous request's END_REQ (request exclusion), a
//   BEGIN_RESP for the previous response's END_RESP (response exclusion), answers given on
//   the return path are taken, and an END_RESP is sent where the rules ask for one.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <tlm>

#include "sim/kernel/access.hpp"
#include "sim/kernel/sc.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

using FwIf = tlm::tlm_fw_transport_if<tlm::tlm_base_protocol_types>;
using BwIf = tlm::tlm_bw_transport_if<tlm::tlm_base_protocol_types>;

// A request that gets no response: a posted store or a control command.
inline bool unanswered(const Access& a) {
  return a.posted || a.kind == PacketKind::Control;
}

// A phase the base protocol does not allow where it came: an error naming the module.
[[noreturn]] void phase_error(const char* where, const tlm::tlm_phase& ph);

// A target takes a request (BEGIN_REQ): queued for when it arrives, among packets due at the
// same time in access-ID order; accepted at once. `item`: what the queue holds for it.
template <class Item>
tlm::tlm_sync_enum accept_request(TimedQueue<Item>& queue, tlm::tlm_generic_payload& gp,
                                  tlm::tlm_phase& ph, const sc_core::sc_time& delay,
                                  const Item& item) {
  queue.push(sim_now() + from_sc(delay), item, order_key(gp));
  if (unanswered(access_of(gp))) {
    gp.acquire();  // ours now; the initiator drops its reference
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return tlm::TLM_COMPLETED;
  }
  ph = tlm::END_REQ;
  return tlm::TLM_UPDATED;
}
inline tlm::tlm_sync_enum accept_request(TimedQueue<tlm::tlm_generic_payload*>& queue,
                                         tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                         const sc_core::sc_time& delay) {
  return accept_request(queue, gp, ph, delay, &gp);
}

// What both lanes share: the interface they call (`peer_`: asked of `find_peer` at the first
// call, when the sockets are bound, and kept), the one transaction in the phase an exclusion
// rule guards (`open_`), and the ones held behind it, in order, with the time each was due.
// What every call reads comes first, in 24 bytes: in a big pod a lane has left the host's
// caches by the time its next transaction comes, and asking the socket for the interface at
// every call read its port's and bindings' lines too.
template <class If>
class ExclusiveLane {
 public:
  using FindPeer = std::function<If*()>;
  std::size_t held() const { return held_count_; }

 protected:
  explicit ExclusiveLane(FindPeer find_peer) : find_peer_(std::move(find_peer)) {}
  If* peer() {
    if (peer_ == nullptr) [[unlikely]]
      peer_ = find_peer_();
    return peer_;
  }

  // Holds `gp` (true) if another is open or already waiting; false: send it now.
  bool hold_if_busy(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay) {
    if (!open_ && held_count_ == 0) [[likely]]
      return false;
    held_.push_back({&gp, sim_now() + from_sc(delay)});
    ++held_count_;
    return true;
  }
  // The open one ended: `issue(gp, delay)` what waited, in order, until one stays open.
  template <class Issue>
  void drain(Issue&& issue) {
    open_ = nullptr;
    while (!open_ && !held_.empty()) {
      const Held h = held_.front();
      held_.pop_front();
      --held_count_;
      issue(*h.gp, to_sc(std::max(h.due, sim_now()) - sim_now()));
    }
  }

  If* peer_ = nullptr;
  tlm::tlm_generic_payload* open_ = nullptr;  // sent to peer_, waiting for the phase that ends it

 private:
  struct Held {
    tlm::tlm_generic_payload* gp;
    Time due;
  };
  std::size_t held_count_ = 0;  // held_.size(), beside what every call reads
  std::deque<Held> held_;
  FindPeer find_peer_;
};

// One initiator binding's request side: BEGIN_REQ now, or held until the previous request on
// this binding has ended (END_REQ, BEGIN_RESP or completion). `answered` gets a response the
// target gave on the return path (TLM_COMPLETED or TLM_UPDATED with BEGIN_RESP) to an answered
// request, with the delay it came with; an unanswered request's completion drops the payload.
class RequestLane : public ExclusiveLane<FwIf> {
 public:
  using Answered = std::function<void(tlm::tlm_generic_payload&, const sc_core::sc_time&)>;
  // `find_peer`: the target's interface (the initiator socket's, or one binding's).
  RequestLane(FindPeer find_peer, Answered answered)
      : ExclusiveLane(std::move(find_peer)), answered_(std::move(answered)) {}

  void send(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay) {
    if (!hold_if_busy(gp, delay)) issue(gp, delay);
  }
  // Backward path: END_REQ for `gp`.
  tlm::tlm_sync_enum end_request(tlm::tlm_generic_payload& gp);
  // Backward path: BEGIN_RESP for `gp` (it ends the request phase if that was still open).
  void begin_response(tlm::tlm_generic_payload& gp) {
    if (open_ == &gp) [[unlikely]]
      reopen();
  }

 private:
  void issue(tlm::tlm_generic_payload& gp, sc_core::sc_time delay) {
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    tlm::tlm_phase ph = tlm::BEGIN_REQ;
    const tlm::tlm_sync_enum r = peer()->nb_transport_fw(gp, ph, delay);
    if (r == tlm::TLM_UPDATED && ph == tlm::END_REQ) [[likely]]
      return;
    returned(gp, r, ph, delay);
  }
  void returned(tlm::tlm_generic_payload& gp, tlm::tlm_sync_enum r, tlm::tlm_phase ph,
                const sc_core::sc_time& delay);
  void reopen();

  Answered answered_;
};

// One target binding's response side: BEGIN_RESP now, or held until the previous response on
// this binding has ended (the initiator's END_RESP).
class ResponseLane : public ExclusiveLane<BwIf> {
 public:
  // `find_peer`: the initiator's interface (the target socket's, or one binding's).
  explicit ResponseLane(FindPeer find_peer) : ExclusiveLane(std::move(find_peer)) {}

  void respond(tlm::tlm_generic_payload& gp, const sc_core::sc_time& delay) {
    if (!hold_if_busy(gp, delay)) issue(gp, delay);
  }
  // Forward path: END_RESP for `gp`.
  tlm::tlm_sync_enum end_response(tlm::tlm_generic_payload& gp);

 private:
  void issue(tlm::tlm_generic_payload& gp, sc_core::sc_time delay) {
    tlm::tlm_phase ph = tlm::BEGIN_RESP;
    const tlm::tlm_sync_enum r = peer()->nb_transport_bw(gp, ph, delay);
    if (r == tlm::TLM_COMPLETED) [[likely]]
      return;
    returned(gp, r, ph);
  }
  void returned(tlm::tlm_generic_payload& gp, tlm::tlm_sync_enum r, tlm::tlm_phase ph);
};

}  // namespace podsim
