// Testbench: Vram on its own, driven through its target socket by a requester that sends at
// chosen times and records when each answer comes back and what it carries, with a
// base-protocol checker between them. Expected times
// from the config: a channel moves a request's bytes at its bandwidth (an atomic's twice),
// one after another; addresses interleave over channels every `interleave` bytes; the answer
// comes `access_latency` after the transfer.
#include <tlm_utils/simple_initiator_socket.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "models/vram/vram.hpp"
#include "tests/support/tlm_checker.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;

namespace {

struct Bench {
  Dispatcher events{"events"};
  VramConfig cfg;
  Vram vram{"vram", cfg, events, 1};
  test::TlmRequester req{"req", events};
  test::BaseProtocolChecker checker{"checker"};  // every test: the base protocol kept
  Bench() {
    req.out.bind(checker.in);
    checker.out.bind(vram.in);
  }
  ~Bench() { test::check_clean(checker); }
  Time transfer(std::uint64_t bytes) const {
    return cfg.channel_bandwidth.transfer_time(Bytes(bytes));
  }
};

}  // namespace

TEST_CASE(
    "VRAM: an answer comes its transfer plus the access latency after the request, requests "
    "to one channel queue and requests to others do not",
    "[models][vram]") {
  Bench b;
  const Time t0 = Time::ns(100);
  const std::uint64_t step = b.cfg.interleave.count();  // the next channel
  REQUIRE(b.vram.channel_of(0) != b.vram.channel_of(step));
  REQUIRE(b.vram.channel_of(0) == b.vram.channel_of(step * b.cfg.channels()));
  const auto r0 = b.req.send(t0, AccessOp::Read, 0, 256);
  // Same channel as r0 (the interleave wraps around every channel): waits for it.
  const auto r1 =
      b.req.send(t0, AccessOp::Read, step * b.cfg.channels(), 256);  // same channel: waits
  const auto r2 = b.req.send(t0, AccessOp::Read, step, 256);         // another channel
  const auto a3 = b.req.send(t0, AccessOp::Atomic, 2 * step, 64);    // twice the bytes
  b.events.run_for(Time::us(1));

  const Time lat = b.cfg.access_latency;
  CHECK(b.req.answers.at(r0).at == t0 + b.transfer(256) + lat);
  CHECK(b.req.answers.at(r1).at == t0 + b.transfer(256) * 2 + lat);
  CHECK(b.req.answers.at(r2).at == t0 + b.transfer(256) + lat);
  CHECK(b.req.answers.at(a3).at == t0 + b.transfer(128) + lat);
}

TEST_CASE(
    "VRAM keeps what is stored: a load returns the last store, a fetch-and-add returns the "
    "old value and leaves the sum",
    "[models][vram][data]") {
  Bench b;
  const std::uint64_t pa = 0x12340;
  const auto w = b.req.send(Time::ns(100), AccessOp::Write, pa, 64, 40);
  const auto r = b.req.send(Time::ns(500), AccessOp::Read, pa, 64);
  const auto f = b.req.send(Time::ns(900), AccessOp::Atomic, pa, 64, 2);
  const auto r2 = b.req.send(Time::ns(1300), AccessOp::Read, pa, 64);
  const auto z = b.req.send(Time::ns(1300), AccessOp::Read, pa + 4096, 64);  // never written
  b.events.run_for(Time::us(2));
  REQUIRE(b.req.answers.count(w) == 1);
  CHECK(b.req.lane(r) == 40);
  CHECK(b.req.lane(f) == 40);   // the old value
  CHECK(b.req.lane(r2) == 42);  // the sum stayed
  CHECK(b.req.lane(z) == 0);
}
