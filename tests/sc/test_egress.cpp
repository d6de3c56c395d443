// Testbench: one Egress driving a Link to a probe, each behaviour on its own. Every expected
// time is worked out from the port's and link's configs (wire time of the packet's TL bytes,
// the port's pipeline delay, the cable's flight time), not read from the model.
#include <catch2/catch.hpp>

#include "fabric/egress.hpp"
#include "fabric/link.hpp"
#include "tests/support/fabric_probe.hpp"

using namespace podsim;
using podsim::test::EgressEnd;
using podsim::test::Injector;
using podsim::test::PacketMaker;
using podsim::test::ProbeEnd;

namespace {

constexpr Time kTxDelay = Time::ns(5);

struct Bench {
  explicit Bench(Bytes queue_capacity = Bytes(0), PortConfig p = PortConfig{})
      : port(p),
        link("link", link_cfg),
        egress("tx", port, link_cfg, kTxDelay, queue_capacity, events, "testbench.tx.wake", Rng(1)),
        sender(egress),
        inject(events, [this](tlm::tlm_generic_payload& gp) { egress.enqueue(gp); }) {
    egress.connect(link, Link::A);
    link.attach(Link::A, sender, 0);
    link.attach(Link::B, receiver, 0);
  }
  // TL bytes and wire time of a packet carrying `payload` bytes.
  std::uint64_t tl(std::uint64_t payload) const { return egress.costs().tl_bytes(payload); }
  Time wire(std::uint64_t payload) const { return egress.costs().wire_time(tl(payload)); }

  Dispatcher events{"events"};
  PortConfig port;
  LinkConfig link_cfg;
  Link link;
  Egress egress;
  EgressEnd sender;
  ProbeEnd receiver;
  Injector inject;
  PacketMaker packets;
};

}  // namespace

TEST_CASE(
    "an idle egress sends at once, back-to-back packets leave one wire time apart, and each "
    "head arrives the port's delay plus the flight time after it leaves",
    "[fabric][egress]") {
  Bench b;
  const Time t0 = Time::ns(100);
  for (int i = 0; i < 3; ++i)  // three 64-byte stores at once
    b.inject.at(t0, b.packets.make(PacketKind::Request, AccessOp::Write, 64));
  b.events.run_for(Time::us(1));

  REQUIRE(b.receiver.arrivals.size() == 3);
  const Time flight = Time::ns(10);  // the default cable: 2 m at 5 ns per metre
  REQUIRE(b.link.flight_time() == flight);
  for (std::size_t k = 0; k < 3; ++k) {
    INFO("packet " << k);
    CHECK(b.receiver.arrivals[k].id == k);
    CHECK(b.receiver.arrivals[k].head ==
          t0 + b.wire(64) * static_cast<std::int64_t>(k) + kTxDelay + flight);
  }
  CHECK(b.egress.queued_packets() == 0);
  CHECK(b.egress.wire_bytes_sent() == 3 * b.egress.costs().wire_bytes(b.tl(64)));
}

TEST_CASE(
    "with room at the receiver for one packet, the next leaves when the receiver's credits "
    "come back, one flight after it freed its buffer",
    "[fabric][egress][credits]") {
  Bench b;
  const std::uint64_t tl = b.tl(64);
  b.egress.set_peer_buffer(Bytes(tl));
  const Time hold = Time::ns(50);  // the receiver frees a packet's buffer this long after its head
  b.receiver.on_receive = [&](std::uint32_t, tlm::tlm_generic_payload& gp, Time head) {
    b.link.return_credits(Link::B, traffic_class(access_of(gp)), tl, head + hold);
  };
  const Time t0 = Time::ns(100);
  for (int i = 0; i < 3; ++i)
    b.inject.at(t0, b.packets.make(PacketKind::Request, AccessOp::Write, 64));
  b.events.run_for(Time::us(2));

  const Time flight = b.link.flight_time();
  REQUIRE(b.receiver.arrivals.size() == 3);
  Time head = t0 + kTxDelay + flight;
  for (std::size_t k = 0; k < 3; ++k) {
    INFO("packet " << k);
    CHECK(b.receiver.arrivals[k].head == head);
    // Its credits reach the sender one flight after the receiver freed the buffer; the next
    // packet leaves then.
    head = head + hold + flight + kTxDelay + flight;
  }
  REQUIRE(b.sender.seen.credits_in.size() == 3);
  CHECK(b.sender.seen.credits_in[0].at == t0 + kTxDelay + flight + hold + flight);
}

namespace {
// Request 0 occupies the link; while it serializes, requests 1 and 2, responses 3 and 4 and a
// control message 5 queue up. The order they reach the receiver in.
std::vector<std::uint64_t> arbitrated(Arbitration arb) {
  PortConfig p;
  p.arbitration = arb;
  Bench b(Bytes(0), p);
  const Time t0 = Time::ns(100);
  b.inject.at(t0, b.packets.make(PacketKind::Request, AccessOp::Write, 64));
  const Time t1 = t0 + Time::ps(1);
  for (int i = 0; i < 2; ++i)
    b.inject.at(t1, b.packets.make(PacketKind::Request, AccessOp::Write, 64));
  for (int i = 0; i < 2; ++i)
    b.inject.at(t1, b.packets.make(PacketKind::Response, AccessOp::Read, 64));
  b.inject.at(t1, b.packets.make(PacketKind::Control, AccessOp::Write, 64));
  b.events.run_for(Time::us(1));
  return b.receiver.ids();
}
}  // namespace

TEST_CASE("strict priority: control first, then every response before any request",
          "[fabric][egress][arbitration]") {
  CHECK(arbitrated(Arbitration::StrictPriority) == std::vector<std::uint64_t>{0, 5, 3, 4, 1, 2});
}

TEST_CASE("round robin: control first, then responses and requests take turns",
          "[fabric][egress][arbitration]") {
  // After request 0 it is the responses' turn.
  CHECK(arbitrated(Arbitration::RoundRobin) == std::vector<std::uint64_t>{0, 5, 3, 1, 4, 2});
}

TEST_CASE(
    "a bounded queue has room per class for what fits and none beyond, and a receiver with no "
    "room stops the sender without dropping anything",
    "[fabric][egress][credits]") {
  const std::uint64_t tl = WireCosts(PortConfig{}).tl_bytes(64);
  Bench b(Bytes(2 * tl));
  b.egress.set_peer_buffer(Bytes(0));  // the receiver has no room at all
  const Time t0 = Time::ns(100);
  for (int i = 0; i < 2; ++i)
    b.inject.at(t0, b.packets.make(PacketKind::Request, AccessOp::Write, 64));
  b.events.run_for(Time::us(1));
  CHECK(b.receiver.arrivals.empty());
  CHECK(b.egress.queued_packets() == 2);
  CHECK_FALSE(b.egress.has_space(TrafficClass::Request, tl));
  CHECK(b.egress.has_space(TrafficClass::Response, tl));
  // Room for the two comes back at 2 us: both leave, and the queue has room again.
  b.link.return_credits(Link::B, TrafficClass::Request, 2 * tl, Time::us(2));
  b.events.run_for(Time::us(2));
  CHECK(b.receiver.ids() == std::vector<std::uint64_t>{0, 1});
  CHECK(b.egress.queued_packets() == 0);
  CHECK(b.egress.has_space(TrafficClass::Request, 2 * tl));
}
