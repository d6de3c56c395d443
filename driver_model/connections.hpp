// The driver's connections, one per peer accelerator (protocol reference, "Connections"):
// NOT_READY, then IN_PROGRESS (this driver sent HELLO) or PENDING (the peer's HELLO arrived),
// then ESTABLISHED (HELLO_ACK), each establishment a new generation. A reset names the
// generation it is about and does nothing to a later one. Plain C++; the Driver runs the
// messages, this keeps the states and their rules (tests/unit/test_connections.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>

#include "driver_model/coro.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/ids.hpp"

namespace podsim::driver {

enum class ConnState : std::uint8_t { NotReady = 0, InProgress = 1, Pending = 2, Established = 3 };
std::string_view conn_state_name(ConnState s);

// Kept only for the peers talked to: a 1,024-GPU pod's driver talks to a few peers, and a
// table of every possible peer cost 32 MB of first-touched memory across the pod. A peer
// never seen reads NOT_READY at generation 0, as it would in a full table.
class Connections {
 public:
  explicit Connections(std::size_t peers) : peers_(peers) {}

  ConnState state(AccelId p) const {
    const Connection* c = find(p);
    return c ? c->state : ConnState::NotReady;
  }
  std::uint32_t generation(AccelId p) const {
    const Connection* c = find(p);
    return c ? c->generation : 0;
  }
  bool established(AccelId p) const { return state(p) == ConnState::Established; }
  // Established, and still at generation `gen` (no reset and re-establishment since).
  bool established_at(AccelId p, std::uint32_t gen) const {
    const Connection* c = find(p);
    return c && c->state == ConnState::Established && c->generation == gen;
  }
  // Woken whenever the connection is established, reset at a generation, given up or dropped
  // (not by clear(): a device reset leaves waiters to find out for themselves).
  WaitQueue& changed(AccelId p) { return slot(p).changed; }

  // This driver sends HELLO: NOT_READY -> IN_PROGRESS. False, changing nothing, from any other
  // state.
  bool start(AccelId p) {
    if (state(p) != ConnState::NotReady) return false;
    slot(p).state = ConnState::InProgress;
    return true;
  }
  // Our HELLO's answer never came: IN_PROGRESS -> NOT_READY (waiters find out themselves).
  void time_out(AccelId p) {
    if (Connection* c = find(p); c && c->state == ConnState::InProgress)
      c->state = ConnState::NotReady;
  }
  // Our HELLO could not be sent: IN_PROGRESS -> NOT_READY, waiters woken.
  void give_up(AccelId p) {
    time_out(p);
    if (Connection* c = find(p)) c->changed.wake_all();
  }
  // The peer's HELLO: NOT_READY -> PENDING (IN_PROGRESS and PENDING stay).
  void hello_received(AccelId p) {
    if (state(p) == ConnState::NotReady) slot(p).state = ConnState::Pending;
  }
  // The peer's HELLO while established: it restarted (what was held with it has been reset,
  // unless B1); PENDING, whatever happened meanwhile.
  void peer_restarted(AccelId p) { slot(p).state = ConnState::Pending; }
  // Our HELLO_ACK could not be sent: back to NOT_READY, waiters woken.
  void drop(AccelId p) {
    if (Connection* c = find(p)) {
      c->state = ConnState::NotReady;
      c->changed.wake_all();
    }
  }
  // HELLO_ACK sent or received: ESTABLISHED, one generation more, waiters woken.
  void establish(AccelId p) {
    Connection& c = slot(p);
    c.state = ConnState::Established;
    ++c.generation;
    c.changed.wake_all();
  }
  // If established at generation `gen` (0: any), the connection goes to `to` and its waiters
  // are woken; true if it did.
  bool reset(AccelId p, ConnState to, std::uint32_t gen) {
    Connection* c = find(p);
    if (!c || c->state != ConnState::Established || (gen != 0 && c->generation != gen))
      return false;
    c->state = to;
    c->changed.wake_all();
    return true;
  }
  // Device reset: every connection NOT_READY at generation 0. A connection someone still waits
  // on stays (its waiters hold it), reading as one never seen.
  void clear() {
    for (auto it = c_.begin(); it != c_.end();) {
      if (it->second.changed.empty()) {
        it = c_.erase(it);
      } else {
        it->second.state = ConnState::NotReady;
        it->second.generation = 0;
        ++it;
      }
    }
  }

  // Coroutines waiting on any connection.
  std::size_t waiting() const {
    std::size_t n = 0;
    for (const auto& [p, c] : c_)
      n += c.changed.size();
    return n;
  }
  // Every connection that is not NOT_READY at generation 0, by peer: peer, state, generation.
  void digest(Digest& d) const {
    for (const auto& [p, c] : c_)
      if (c.state != ConnState::NotReady || c.generation != 0)
        d.add(std::size_t{p}).add(static_cast<std::uint64_t>(c.state)).add(c.generation);
  }
  // Peers with a connection table entry (talked to since the last clear()), for tests.
  std::size_t peers_known() const { return c_.size(); }

 private:
  struct Connection {
    ConnState state = ConnState::NotReady;
    std::uint32_t generation = 0;
    WaitQueue changed;
  };
  const Connection* find(AccelId p) const {
    auto it = c_.find(p);
    return it == c_.end() ? nullptr : &it->second;
  }
  Connection* find(AccelId p) {
    auto it = c_.find(p);
    return it == c_.end() ? nullptr : &it->second;
  }
  Connection& slot(AccelId p) {
    if (p >= peers_)
      throw std::out_of_range("connection to accelerator " + std::to_string(p) +
                              " beyond the table's " + std::to_string(peers_));
    return c_[p];  // a node: references (waiters) stay valid as others are added
  }
  std::size_t peers_;
  std::map<AccelId, Connection> c_;
};

}  // namespace podsim::driver
