// The driver's connections, one per peer accelerator (protocol reference, "Connections"):
// NOT_READY, then IN_PROGRESS (this driver sent HELLO) or PENDING (the peer's HELLO arrived),
// then ESTABLISHED (HELLO_ACK), each establishment a new generation. A reset names the
// generation it is about and does nothing to a later one. Plain C++; the Driver runs the
// messages, this keeps the states and their rules (tests/unit/test_connections.cpp).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "driver_model/coro.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/ids.hpp"

namespace podsim::driver {

enum class ConnState : std::uint8_t { NotReady = 0, InProgress = 1, Pending = 2, Established = 3 };
std::string_view conn_state_name(ConnState s);

class Connections {
 public:
  explicit Connections(std::size_t peers) : c_(peers) {}

  ConnState state(AccelId p) const { return c_[p].state; }
  std::uint32_t generation(AccelId p) const { return c_[p].generation; }
  bool established(AccelId p) const { return c_[p].state == ConnState::Established; }
  // Established, and still at generation `gen` (no reset and re-establishment since).
  bool established_at(AccelId p, std::uint32_t gen) const {
    return established(p) && c_[p].generation == gen;
  }
  // Woken whenever the connection is established, reset at a generation, given up or dropped
  // (not by clear(): a device reset leaves waiters to find out for themselves).
  WaitQueue& changed(AccelId p) { return c_[p].changed; }

  // This driver sends HELLO: NOT_READY -> IN_PROGRESS. False, changing nothing, from any other
  // state.
  bool start(AccelId p) {
    if (c_[p].state != ConnState::NotReady) return false;
    c_[p].state = ConnState::InProgress;
    return true;
  }
  // Our HELLO's answer never came: IN_PROGRESS -> NOT_READY (waiters find out themselves).
  void time_out(AccelId p) {
    if (c_[p].state == ConnState::InProgress) c_[p].state = ConnState::NotReady;
  }
  // Our HELLO could not be sent: IN_PROGRESS -> NOT_READY, waiters woken.
  void give_up(AccelId p) {
    time_out(p);
    c_[p].changed.wake_all();
  }
  // The peer's HELLO: NOT_READY -> PENDING (IN_PROGRESS and PENDING stay).
  void hello_received(AccelId p) {
    if (c_[p].state == ConnState::NotReady) c_[p].state = ConnState::Pending;
  }
  // The peer's HELLO while established: it restarted (what was held with it has been reset,
  // unless B1); PENDING, whatever happened meanwhile.
  void peer_restarted(AccelId p) { c_[p].state = ConnState::Pending; }
  // Our HELLO_ACK could not be sent: back to NOT_READY, waiters woken.
  void drop(AccelId p) {
    c_[p].state = ConnState::NotReady;
    c_[p].changed.wake_all();
  }
  // HELLO_ACK sent or received: ESTABLISHED, one generation more, waiters woken.
  void establish(AccelId p) {
    c_[p].state = ConnState::Established;
    ++c_[p].generation;
    c_[p].changed.wake_all();
  }
  // If established at generation `gen` (0: any), the connection goes to `to` and its waiters
  // are woken; true if it did.
  bool reset(AccelId p, ConnState to, std::uint32_t gen) {
    Connection& c = c_[p];
    if (c.state != ConnState::Established || (gen != 0 && c.generation != gen)) return false;
    c.state = to;
    c.changed.wake_all();
    return true;
  }
  // Device reset: every connection NOT_READY at generation 0.
  void clear() {
    for (Connection& c : c_) {
      c.state = ConnState::NotReady;
      c.generation = 0;
    }
  }

  // Coroutines waiting on any connection.
  std::size_t waiting() const {
    std::size_t n = 0;
    for (const Connection& c : c_)
      n += c.changed.size();
    return n;
  }
  // Every connection that is not NOT_READY at generation 0: peer, state, generation.
  void digest(Digest& d) const {
    for (std::size_t p = 0; p < c_.size(); ++p)
      if (c_[p].state != ConnState::NotReady || c_[p].generation != 0)
        d.add(p).add(static_cast<std::uint64_t>(c_[p].state)).add(c_[p].generation);
  }

 private:
  struct Connection {
    ConnState state = ConnState::NotReady;
    std::uint32_t generation = 0;
    WaitQueue changed;
  };
  std::vector<Connection> c_;
};

}  // namespace podsim::driver
