// Testbench: a Link between two probe ends. A packet's head reaches the far end one flight
// time (cable length x delay per metre) after it left, stamped as it went onto the wire; a
// credit return flies the same time back; each direction is counted; a link must have both
// ends, each attached once.
#include <catch2/catch.hpp>

#include "fabric/link.hpp"
#include "tests/support/fabric_probe.hpp"

using namespace podsim;
using podsim::test::PacketMaker;
using podsim::test::ProbeEnd;

namespace {

std::uint64_t counter(const Link& l, const std::string& name) {
  for (const Stat* s : l.stat_group().stats())
    if (s->name() == name && s->as<Counter>()) return s->as<Counter>()->value();
  FAIL("no counter " << name);
  return 0;
}

}  // namespace

TEST_CASE("Link: packets both ways arrive one flight time later, stamped at departure",
          "[sc][link]") {
  LinkConfig cfg;
  cfg.cable_length = Length::mm(3500);
  cfg.delay_per_metre = Time::ps(4900);
  const Time flight = Time::ps(17150);  // 3.5 m x 4.9 ns
  Link link("link", cfg);
  ProbeEnd a, b;
  link.attach(Link::A, a, 4);  // port 4 of end A
  link.attach(Link::B, b, 9);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  REQUIRE(link.flight_time() == flight);

  PacketMaker packets;
  auto& p0 = packets.make(PacketKind::Request, AccessOp::Read, 64);
  auto& p1 = packets.make(PacketKind::Response, AccessOp::Read, 64);
  auto& p2 = packets.make(PacketKind::Control, AccessOp::Write, 64);
  link.send(Link::A, p0, Time::ns(100));
  link.send(Link::B, p1, Time::ns(120));
  link.send(Link::A, p2, Time::ns(130));

  REQUIRE(b.arrivals.size() == 2);
  REQUIRE(a.arrivals.size() == 1);
  CHECK(b.arrivals[0].id == access_of(p0).id);
  CHECK(b.arrivals[0].port == 9);
  CHECK(b.arrivals[0].head == Time::ns(100) + flight);
  CHECK(b.arrivals[1].id == access_of(p2).id);
  CHECK(b.arrivals[1].head == Time::ns(130) + flight);
  CHECK(a.arrivals[0].id == access_of(p1).id);
  CHECK(a.arrivals[0].port == 4);
  CHECK(a.arrivals[0].head == Time::ns(120) + flight);
  // The link's stamp: the moment the head went onto the wire, in the packet's direction.
  const Access& r = access_of(p1);
  REQUIRE(r.hop_count == 1);
  CHECK(r.hops[0].kind() == HopKind::Link);
  CHECK(r.hops[0].at() == Time::ns(120));
  CHECK(r.hops[0].response());
  CHECK_FALSE(access_of(p0).hops[0].response());
  CHECK(counter(link, "packets_a_to_b") == 2);
  CHECK(counter(link, "packets_b_to_a") == 1);
  CHECK(a.credits_in.empty());
  CHECK(b.credits_in.empty());
}

TEST_CASE("Link: credits fly back one flight time later, class and amount unchanged",
          "[sc][link]") {
  LinkConfig cfg;  // 2 m at 5 ns per metre
  Link link("link", cfg);
  ProbeEnd a, b;
  link.attach(Link::A, a, 0);
  link.attach(Link::B, b, 2);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  link.return_credits(Link::B, TrafficClass::Request, 96, Time::ns(50));
  link.return_credits(Link::B, TrafficClass::Response, 320, Time::ns(51));
  link.return_credits(Link::A, TrafficClass::Control, 64, Time::ns(52));
  REQUIRE(a.credits_in.size() == 2);
  REQUIRE(b.credits_in.size() == 1);
  CHECK(a.credits_in[0].tc == TrafficClass::Request);
  CHECK(a.credits_in[0].tl == 96);
  CHECK(a.credits_in[0].port == 0);
  CHECK(a.credits_in[0].at == Time::ns(60));
  CHECK(a.credits_in[1].tc == TrafficClass::Response);
  CHECK(a.credits_in[1].tl == 320);
  CHECK(a.credits_in[1].at == Time::ns(61));
  CHECK(b.credits_in[0].tc == TrafficClass::Control);
  CHECK(b.credits_in[0].port == 2);
  CHECK(b.credits_in[0].at == Time::ns(62));
  CHECK(a.arrivals.empty());
  CHECK(b.arrivals.empty());
}

TEST_CASE("Link: an end attached twice is an error", "[sc][link]") {
  Link link("link", LinkConfig{});
  ProbeEnd a, b;
  link.attach(Link::A, a, 0);
  CHECK_THROWS_WITH(link.attach(Link::A, b, 1), Catch::Contains("link: end attached twice"));
}

TEST_CASE("Link: a link without both ends does not elaborate", "[sc][link]") {
  Link link("dangling", LinkConfig{});
  ProbeEnd a;
  link.attach(Link::A, a, 0);
  CHECK_THROWS_WITH(sc_core::sc_start(sc_core::SC_ZERO_TIME),
                    Catch::Contains("dangling: a link end is not attached"));
}

TEST_CASE(
    "Link: credits wait out a stall, and can be returned as the link stood when a packet was "
    "sent",
    "[sc][link]") {
  LinkConfig cfg;  // 2 m at 5 ns per metre: credits arrive 10 ns after they are returned
  Link link("link", cfg);
  ProbeEnd a, b;
  link.attach(Link::A, a, 0);
  link.attach(Link::B, b, 0);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  CHECK(link.stalled_until_for(Time::ns(5)) == Time{});
  sc_core::sc_start(to_sc(Time::ns(100)));
  link.stall_until(Time::ns(300));  // made at 100 ns
  sc_core::sc_start(to_sc(Time::ns(100)));
  link.stall_until(Time::ns(250));  // made at 200 ns: the stall still ends at 300 ns
  CHECK(link.stalled_until() == Time::ns(300));
  // Sent before the first stall was made, or at that very time: not stalled then.
  CHECK(link.stalled_until_for(Time::ns(50)) == Time{});
  CHECK(link.stalled_until_for(Time::ns(100)) == Time{});
  CHECK(link.stalled_until_for(Time::ps(100001)) == Time::ns(300));
  CHECK(link.stalled_until_for(Time::ns(250)) == Time::ns(300));
  // Returned now, credits ride the first flit after the stall; returned as the link stood at
  // 50 ns, they go at once.
  link.return_credits(Link::B, TrafficClass::Request, 96, Time::ns(210));
  link.return_credits(Link::B, TrafficClass::Request, 64, Time::ns(210),
                      link.stalled_until_for(Time::ns(50)));
  REQUIRE(a.credits_in.size() == 2);
  CHECK(a.credits_in[0].at == Time::ns(310));
  CHECK(a.credits_in[1].at == Time::ns(220));
  // A stall for good swallows them.
  link.stall_until(Time::max());
  link.return_credits(Link::B, TrafficClass::Request, 32, Time::ns(400));
  CHECK(a.credits_in.size() == 2);
}
