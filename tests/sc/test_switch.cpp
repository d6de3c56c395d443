// Testbench: a 3-port UaloeSwitch, two senders (an Egress each, on ports 0 and 1) and a
// receiver probe on port 2, through Links. Expected times from the configs: the switch's
// port-to-port latency, the wire time of a packet's TL bytes, the senders' port delay and
// 10 ns of cable per hop.
#include <catch2/catch.hpp>

#include "fabric/link.hpp"
#include "fabric/ualoe_switch.hpp"
#include "tests/support/fabric_probe.hpp"

using namespace podsim;
using podsim::test::EgressEnd;
using podsim::test::Injector;
using podsim::test::PacketMaker;
using podsim::test::ProbeEnd;

namespace {

constexpr Time kTxDelay = Time::ns(5);
constexpr Time kFlight = Time::ns(10);  // the default cable: 2 m at 5 ns per metre

struct Bench {
  explicit Bench(SwitchConfig c = SwitchConfig{})
      : cfg(c),
        sw("switch", cfg, port, link_cfg, 3, events, 1),
        in0("in0", port, link_cfg, kTxDelay, Bytes(0), events, "testbench.in0.wake", Rng(2)),
        in1("in1", port, link_cfg, kTxDelay, Bytes(0), events, "testbench.in1.wake", Rng(3)),
        s0(in0),
        s1(in1),
        inject0(
            events, [this](tlm::tlm_generic_payload& gp) { in0.enqueue(gp); }, "tb.inject0"),
        inject1(
            events, [this](tlm::tlm_generic_payload& gp) { in1.enqueue(gp); }, "tb.inject1") {
    in0.connect(l0, Link::A);
    in1.connect(l1, Link::A);
    l0.attach(Link::A, s0, 0);
    l1.attach(Link::A, s1, 0);
    sw.connect(0, l0, Link::B);
    sw.connect(1, l1, Link::B);
    sw.connect(2, l2, Link::A);
    l2.attach(Link::B, receiver, 0);
    sw.set_route(2, 2);
    in0.set_peer_buffer(cfg.input_buffer);  // the switch's input buffers
    in1.set_peer_buffer(cfg.input_buffer);
  }
  std::uint64_t tl(std::uint64_t payload) const { return in0.costs().tl_bytes(payload); }
  Time wire(std::uint64_t payload) const { return in0.costs().wire_time(tl(payload)); }
  tlm::tlm_generic_payload& store() {
    return packets.make(PacketKind::Request, AccessOp::Write, 64, 2);
  }

  Dispatcher events{"events"};
  SwitchConfig cfg;
  PortConfig port;
  LinkConfig link_cfg;
  Link l0{"l0", link_cfg}, l1{"l1", link_cfg}, l2{"l2", link_cfg};
  UaloeSwitch sw;
  Egress in0, in1;
  EgressEnd s0, s1;
  ProbeEnd receiver;
  Injector inject0, inject1;
  PacketMaker packets;
};

}  // namespace

TEST_CASE(
    "at zero load a packet crosses the switch in its port-to-port latency, and the input's "
    "credits go back as it moves to its output, before the output's pipeline and SerDes",
    "[fabric][switch]") {
  Bench b;
  REQUIRE(b.l0.flight_time() == kFlight);
  const Time t0 = Time::ns(100);
  b.inject0.at(t0, b.store());
  b.events.run_for(Time::us(1));

  const Time at_switch = t0 + kTxDelay + kFlight;  // its head comes in
  REQUIRE(b.receiver.arrivals.size() == 1);
  CHECK(b.receiver.arrivals[0].head == at_switch + b.cfg.latency + kFlight);
  REQUIRE(b.s0.seen.credits_in.size() == 1);
  CHECK(b.s0.seen.credits_in[0].tl == b.tl(64));
  // The output's pipeline and SerDes (a port's transmit latency) are the last part of the
  // switch's latency: the packet left its input buffer that much before its head left.
  const Time out_part = PortConfig{}.tx_latency();
  CHECK(b.s0.seen.credits_in[0].at == at_switch + b.cfg.latency - out_part + kFlight);
}

TEST_CASE(
    "two inputs at once to one output: both are queued at the output, the second leaves one "
    "wire time after the first",
    "[fabric][switch]") {
  Bench b;
  const Time t0 = Time::ns(100);
  b.inject0.at(t0, b.store());  // id 0
  b.inject1.at(t0, b.store());  // id 1
  b.events.run_for(Time::us(1));

  REQUIRE(b.receiver.arrivals.size() == 2);
  const Time first = t0 + kTxDelay + kFlight + b.cfg.latency + kFlight;
  CHECK(b.receiver.ids() == std::vector<std::uint64_t>{0, 1});  // same time: by access ID
  CHECK(b.receiver.arrivals[0].head == first);
  CHECK(b.receiver.arrivals[1].head == first + b.wire(64));
  CHECK(b.sw.output(2).queue_delay().histogram().count() == 2);
}

TEST_CASE(
    "a full output queue holds packets in their input buffer with their credits: the sender "
    "stops, nothing is lost, order is kept",
    "[fabric][switch][credits]") {
  SwitchConfig c;
  const std::uint64_t tl = WireCosts(PortConfig{}).tl_bytes(64);
  c.output_buffer = Bytes(tl);  // room for one packet per class
  Bench b(c);
  b.sw.set_peer_buffer(2, Bytes(0));  // the receiver takes nothing yet
  const Time t0 = Time::ns(100);
  for (int i = 0; i < 4; ++i)
    b.inject0.at(t0, b.store());
  b.events.run_for(Time::us(1));
  // One packet sits in the output queue; the others wait in the input buffer, their credits
  // not returned.
  CHECK(b.receiver.arrivals.empty());
  CHECK(b.s0.seen.credits_in.size() == 1);
  CHECK(b.sw.output(2).queued_packets() == 1);

  // The receiver makes room for all four at 2 us: they arrive in order, one wire time apart,
  // and every input credit comes back.
  const Time room = Time::us(2);
  b.l2.return_credits(Link::B, TrafficClass::Request, 4 * tl, room);
  b.events.run_for(Time::us(2));
  REQUIRE(b.receiver.ids() == std::vector<std::uint64_t>{0, 1, 2, 3});
  // The credits reach the switch; the packet goes through its output's pipeline and SerDes and
  // flies.
  const Time first = room + kFlight + PortConfig{}.tx_latency() + kFlight;
  for (std::size_t k = 0; k < 4; ++k) {
    INFO("packet " << k);
    CHECK(b.receiver.arrivals[k].head == first + b.wire(64) * static_cast<std::int64_t>(k));
  }
  CHECK(b.s0.seen.credits_in.size() == 4);
}
