// Testbench: two FirmwareMailboxes (GPUs 0 and 1) joined by a wire that carries each packet to
// the other after a fixed delay, standing in for ports, links and the switch. Expected times
// from the mailbox config (firmware, interrupt and TLB-flush latencies) and the wire's delay.
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <catch2/catch.hpp>
#include <vector>

#include "models/mailbox/firmware_mailbox.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;

namespace {

constexpr Time kWire = Time::ns(300);  // one way, any packet

// Carries what mailbox `from` sends to the other mailbox, kWire later.
struct Wire : sc_core::sc_module {
  tlm_utils::simple_target_socket<Wire> in[2];
  tlm_utils::simple_initiator_socket<Wire> out[2];
  Wire(sc_core::sc_module_name n) : sc_module(n) {
    in[0].register_nb_transport_fw(this, &Wire::from0);
    in[1].register_nb_transport_fw(this, &Wire::from1);
  }
  tlm::tlm_sync_enum from0(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d) {
    return carry(1, gp, ph, d);
  }
  tlm::tlm_sync_enum from1(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d) {
    return carry(0, gp, ph, d);
  }
  tlm::tlm_sync_enum carry(int to, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                           sc_core::sc_time& d) {
    REQUIRE(access_of(gp).route_to == to);
    sc_core::sc_time later = d + to_sc(kWire);
    return out[to]->nb_transport_fw(gp, ph, later);
  }
};

struct Interrupt {
  Time at;
  AccelId from;
  FwCommand cmd;
};
struct Writeback {
  Time at;
  AccelId receiver;
  unsigned ring;
  std::uint32_t seq, status;
};

struct Bench {
  Dispatcher events{"events"};
  PacketPool pool;
  MailboxConfig cfg;
  FirmwareMailbox a{"gpu0_mailbox", cfg, 0, pool, events};
  FirmwareMailbox b{"gpu1_mailbox", cfg, 1, pool, events};
  Wire wire{"wire"};
  std::vector<Interrupt> interrupts;  // at b
  std::vector<Writeback> writebacks;  // at a
  int flushes = 0;                    // at b
  // The base protocol on each of the mailboxes' sockets (commands are posted writes).
  test::BaseProtocolChecker a_out{"a_out"}, b_out{"b_out"}, a_in{"a_in"}, b_in{"b_in"};
  Bench() {
    a.to_port.bind(a_out.in);
    a_out.out.bind(wire.in[0]);
    b.to_port.bind(b_out.in);
    b_out.out.bind(wire.in[1]);
    wire.out[0].bind(a_in.in);
    a_in.out.bind(a.from_port);
    wire.out[1].bind(b_in.in);
    b_in.out.bind(b.from_port);
    b.set_interrupt_handler([this](AccelId from, const FwCommand& c) {
      interrupts.push_back({sim_now(), from, c});
    });
    a.set_writeback_handler([this](AccelId r, unsigned ring, std::uint32_t seq, std::uint32_t st) {
      writebacks.push_back({sim_now(), r, ring, seq, st});
    });
    b.set_tlb_invalidate_handler([this] { ++flushes; });
  }
  // Sends from a at `t` (through a one-off queue item).
  void send_at(Time t, FwCommand cmd) { sends.push(t, cmd); }
  TimedQueue<FwCommand> sends{events, "testbench.sends",
                              [this](FwCommand& c) { results.push_back(a.send(1, c)); }};
  std::vector<std::optional<std::uint32_t>> results;
  ~Bench() {
    for (const auto* c : {&a_out, &b_out, &a_in, &b_in})
      test::check_clean(*c);
    CHECK(a_out.begun() > 0);
  }
};

FwCommand message(std::uint32_t x) {
  FwCommand c;
  c.kind = FwCommandKind::Int;
  c.dw = {x, x + 1, x + 2, x + 3};
  return c;
}

}  // namespace

TEST_CASE(
    "a command crosses to the receiver's ring, its firmware reports it consumed to the sender "
    "and interrupts the receiver's driver, each after its latency",
    "[models][mailbox]") {
  Bench tb;
  const Time t0 = Time::us(1);
  tb.send_at(t0, message(7));
  tb.events.run_for(Time::us(20));

  REQUIRE(tb.results.size() == 1);
  CHECK(tb.results[0] == std::optional<std::uint32_t>(0));
  // Command and doorbell arrive together; the firmware takes the command.
  const Time consumed = t0 + kWire + tb.cfg.firmware_latency;
  REQUIRE(tb.writebacks.size() == 1);
  CHECK(tb.writebacks[0].at == consumed + kWire);
  CHECK(tb.writebacks[0].receiver == 1);
  CHECK(tb.writebacks[0].ring == 0);
  CHECK(tb.writebacks[0].seq == 0);
  CHECK(tb.writebacks[0].status == 0);
  REQUIRE(tb.interrupts.size() == 1);
  CHECK(tb.interrupts[0].at == consumed + tb.cfg.interrupt_latency);
  CHECK(tb.interrupts[0].from == 0);
  CHECK(tb.interrupts[0].cmd.dw == std::array<std::uint32_t, 4>{7, 8, 9, 10});
  CHECK(tb.a.in_flight(1, 0) == 0);
}

TEST_CASE(
    "the receiver's firmware takes commands one at a time, in order, and a TLB shootdown "
    "flushes instead of interrupting",
    "[models][mailbox]") {
  Bench tb;
  const Time t0 = Time::us(1);
  tb.send_at(t0, message(1));
  tb.send_at(t0, message(2));
  FwCommand flush;
  flush.kind = FwCommandKind::TlbInv;
  tb.send_at(t0, flush);
  tb.events.run_for(Time::us(30));

  const Time fw = tb.cfg.firmware_latency;
  REQUIRE(tb.interrupts.size() == 2);
  CHECK(tb.interrupts[0].cmd.dw[0] == 1);
  CHECK(tb.interrupts[1].cmd.dw[0] == 2);
  CHECK(tb.interrupts[0].at == t0 + kWire + fw + tb.cfg.interrupt_latency);
  CHECK(tb.interrupts[1].at == t0 + kWire + fw * 2 + tb.cfg.interrupt_latency);
  CHECK(tb.flushes == 1);
  REQUIRE(tb.writebacks.size() == 3);
  // The shootdown is on its own ring and costs the flush too.
  CHECK(tb.writebacks[2].ring == 1);
  CHECK(tb.writebacks[2].at == t0 + kWire + fw * 3 + tb.cfg.tlb_invalidate_latency + kWire);
}

TEST_CASE(
    "a ring holds one command less than its slots in flight: the next send is refused "
    "(ENOSPC)",
    "[models][mailbox][enospc]") {
  Bench tb;
  tb.b.set_down(true);  // the receiver takes nothing: no write-backs come back
  const Time t0 = Time::us(1);
  for (std::uint32_t i = 0; i < tb.cfg.ring_slots; ++i)
    tb.send_at(t0, message(i));
  tb.events.run_for(Time::us(10));
  REQUIRE(tb.results.size() == tb.cfg.ring_slots);
  for (std::uint32_t i = 0; i + 1 < tb.cfg.ring_slots; ++i)
    CHECK(tb.results[i] == std::optional<std::uint32_t>(i));
  CHECK_FALSE(tb.results.back().has_value());
  CHECK(tb.a.in_flight(1, 0) == tb.cfg.ring_slots - 1);
}
