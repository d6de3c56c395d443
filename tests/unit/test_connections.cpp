// The driver's connection table on its own: states, generations and what a reset may touch.
#include <catch2/catch.hpp>

#include "driver_model/connections.hpp"

using namespace podsim;
using namespace podsim::driver;

TEST_CASE("a connection is established once per handshake, one generation more each time",
          "[driver][connections]") {
  Connections c(4);
  CHECK(c.state(2) == ConnState::NotReady);
  CHECK(c.start(2));
  CHECK(c.state(2) == ConnState::InProgress);
  CHECK_FALSE(c.start(2));  // a second HELLO is not started while one is out
  c.establish(2);
  CHECK(c.established(2));
  CHECK(c.generation(2) == 1);
  CHECK(c.reset(2, ConnState::NotReady, 1));
  CHECK_FALSE(c.established(2));
  CHECK(c.generation(2) == 1);  // a reset ends a generation; the next handshake starts one
  CHECK(c.start(2));
  c.establish(2);
  CHECK(c.generation(2) == 2);
  CHECK(c.established_at(2, 2));
  CHECK_FALSE(c.established_at(2, 1));
  CHECK(c.state(1) == ConnState::NotReady);  // other peers untouched
}

TEST_CASE("a reset names its generation: one about an older generation does nothing",
          "[driver][connections]") {
  Connections c(4);
  c.establish(3);
  c.establish(3);  // re-established: generation 2
  CHECK_FALSE(c.reset(3, ConnState::Pending, 1));
  CHECK(c.established(3));
  CHECK(c.reset(3, ConnState::Pending, 0));  // 0: whatever the generation
  CHECK(c.state(3) == ConnState::Pending);
  CHECK_FALSE(c.reset(3, ConnState::NotReady, 0));  // not established: nothing to reset
  CHECK(c.state(3) == ConnState::Pending);
}

TEST_CASE(
    "the peer's HELLO: not ready becomes pending, a handshake in flight stays, a "
    "restarted peer's connection becomes pending",
    "[driver][connections]") {
  Connections c(4);
  c.hello_received(0);
  CHECK(c.state(0) == ConnState::Pending);
  c.start(1);
  c.hello_received(1);
  CHECK(c.state(1) == ConnState::InProgress);
  c.establish(2);
  c.hello_received(2);
  CHECK(c.established(2));  // an established connection changes only by peer_restarted
  c.peer_restarted(2);
  CHECK(c.state(2) == ConnState::Pending);
  c.drop(2);  // our HELLO_ACK could not be sent
  CHECK(c.state(2) == ConnState::NotReady);
}

TEST_CASE("an unanswered HELLO goes back to not ready, and nothing else does",
          "[driver][connections]") {
  Connections c(4);
  c.start(1);
  c.time_out(1);
  CHECK(c.state(1) == ConnState::NotReady);
  c.start(1);
  c.give_up(1);
  CHECK(c.state(1) == ConnState::NotReady);
  c.establish(3);
  c.time_out(3);
  c.give_up(3);
  CHECK(c.established(3));
}

TEST_CASE("a device reset clears every connection, and the digest lists only live ones",
          "[driver][connections]") {
  Connections a(4), b(4);
  a.establish(1);
  a.start(3);
  Digest before;
  a.digest(before);
  a.clear();
  for (AccelId p = 0; p < 4; ++p) {
    CHECK(a.state(p) == ConnState::NotReady);
    CHECK(a.generation(p) == 0);
  }
  Digest cleared, fresh;
  a.digest(cleared);
  b.digest(fresh);
  CHECK(cleared.value() == fresh.value());
  CHECK(before.value() != fresh.value());
}

TEST_CASE("the table holds only peers talked to, and a peer never seen reads not ready",
          "[driver][connections]") {
  Connections c(1024);
  CHECK(c.state(1000) == ConnState::NotReady);  // reading creates nothing
  CHECK(c.generation(1000) == 0);
  CHECK_FALSE(c.established_at(1000, 0));
  c.drop(7);  // nothing to drop, nothing made
  c.time_out(7);
  c.give_up(7);
  CHECK_FALSE(c.reset(7, ConnState::NotReady, 0));
  CHECK(c.peers_known() == 0);
  WaitQueue& q = c.changed(900);
  for (AccelId p = 0; p < 64; ++p)
    c.establish(p);  // more peers: the first one's wait queue stays where it was
  CHECK(&c.changed(900) == &q);
  CHECK(c.peers_known() == 65);
  Digest d;
  c.digest(d);
  Connections full(1024);
  for (AccelId p = 0; p < 64; ++p)
    full.establish(p);
  Digest e;
  full.digest(e);
  CHECK(d.value() == e.value());  // peer 900, never past NOT_READY at 0, is not in the digest
  c.clear();
  CHECK(c.peers_known() == 0);  // nobody waits: every entry goes
}

TEST_CASE("a connection to an accelerator beyond the table is an error, not a write past it",
          "[driver][connections]") {
  Connections c(4);
  CHECK_THROWS_AS(c.establish(4), std::out_of_range);
  CHECK(c.state(4) == ConnState::NotReady);
  CHECK(c.peers_known() == 0);
}
