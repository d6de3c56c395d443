// Testbench: Vram on its own, driven through its target socket by a requester that sends at
// chosen times and records when each answer comes back and what it carries. Expected times
// from the config: a channel moves a request's bytes at its bandwidth (an atomic's twice),
// one after another; addresses interleave over channels every `interleave` bytes; the answer
// comes `access_latency` after the transfer.
#include <tlm_utils/simple_initiator_socket.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <map>

#include "models/vram/vram.hpp"
#include "tests/support/fabric_probe.hpp"

using namespace podsim;
using podsim::test::PacketMaker;

namespace {

struct Requester : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Requester> out{"out"};
  struct Answer {
    Time at;
    std::array<unsigned char, 64> data;
  };
  std::map<std::uint64_t, Answer> answers;  // by access id
  PacketMaker packets;
  TimedQueue<tlm::tlm_generic_payload*> sends;

  Requester(sc_core::sc_module_name n, Dispatcher& events)
      : sc_module(n), sends(events, queue_name(*this, "sends"), [this](auto* gp) {
          tlm::tlm_phase ph = tlm::BEGIN_REQ;
          sc_core::sc_time d = sc_core::SC_ZERO_TIME;
          out->nb_transport_fw(*gp, ph, d);
        }) {
    out.register_nb_transport_bw(this, &Requester::bw);
  }
  // A request of `size` bytes at `pa`, sent at `t`; for stores and atomics, 8-byte lanes of
  // `value`.
  std::uint64_t send(Time t, AccessOp op, std::uint64_t pa, std::uint32_t size,
                     std::uint64_t value = 0) {
    auto& gp = packets.make(PacketKind::Request, op, size);
    gp.set_address(pa);
    gp.set_data_length(size);
    // A load's buffer starts as garbage (0xAA), so reading zeros means memory held zeros.
    if (op == AccessOp::Read) std::memset(gp.get_data_ptr(), 0xAA, size);
    for (std::uint32_t off = 0; op != AccessOp::Read && off + 8 <= size; off += 8)
      std::memcpy(gp.get_data_ptr() + off, &value, 8);
    sends.push(t, &gp, access_of(gp).id);
    return access_of(gp).id;
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time& d) {
    Answer a{sim_now() + from_sc(d), {}};
    std::memcpy(a.data.data(), gp.get_data_ptr(), 64);
    answers[access_of(gp).id] = a;
    gp.release();
    return tlm::TLM_COMPLETED;
  }
  std::uint64_t lane(std::uint64_t id) const {
    std::uint64_t x;
    std::memcpy(&x, answers.at(id).data.data(), 8);
    return x;
  }
};

struct Bench {
  Dispatcher events{"events"};
  VramConfig cfg;
  Vram vram{"vram", cfg, events, 1};
  Requester req{"req", events};
  Bench() { req.out.bind(vram.in); }
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
