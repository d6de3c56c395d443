// Testbench: two FirmwareMailboxes (GPUs 0 and 1) joined by a wire that stands in for ports,
// links, the switch and the receiver's memory. It carries each packet to the other mailbox
// kWire later, and each write the mailbox makes into memory (ring slot, write pointer,
// write-back: transport npa_writes) lands there kMemory after that, which the wire reports to
// the mailbox as its VRAM would. Expected times from the mailbox config (firmware, interrupt
// and TLB-flush latencies) and the wire's delays.
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/mailbox/firmware_mailbox.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;

namespace {

constexpr Time kWire = Time::ns(300);    // one way, any packet
constexpr Time kMemory = Time::ns(200);  // from a write's arrival to its landing in memory

struct Sent {
  AccelId from;
  std::uint32_t plane;
  MailboxWrite kind;
  PacketKind packet;
  std::uint64_t npa;
};

// Carries what mailbox `from` sends to the other mailbox, kWire later; memory writes land
// kMemory after that (plus `extra_memory` for the kinds in it).
struct Wire : sc_core::sc_module {
  tlm_utils::multi_passthrough_target_socket<Wire> in0{"in0"}, in1{"in1"};
  tlm_utils::simple_initiator_socket<Wire> out[2];
  FirmwareMailbox* mailbox[2] = {nullptr, nullptr};
  std::vector<Sent> sent;
  std::map<MailboxWrite, Time> extra_memory;
  bool drop_doorbells = false;
  Wire(sc_core::sc_module_name n) : sc_module(n) {
    in0.register_nb_transport_fw(this, &Wire::from0);
    in1.register_nb_transport_fw(this, &Wire::from1);
  }
  tlm::tlm_sync_enum from0(int plane, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                           sc_core::sc_time& d) {
    return carry(0, plane, gp, ph, d);
  }
  tlm::tlm_sync_enum from1(int plane, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                           sc_core::sc_time& d) {
    return carry(1, plane, gp, ph, d);
  }
  tlm::tlm_sync_enum carry(int from, int plane, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                           sc_core::sc_time& d) {
    const int to = 1 - from;
    Access& a = access_of(gp);
    REQUIRE(a.route_to == to);
    REQUIRE(a.plane == static_cast<std::uint32_t>(plane));
    sent.push_back({a.src, a.plane, a.mailbox, a.kind, a.npa});
    if (a.kind == PacketKind::Request && a.mailbox != MailboxWrite::Doorbell) {
      // A posted write into the receiver's memory: it lands there later.
      REQUIRE(a.posted);
      const auto extra = extra_memory.find(a.mailbox);
      mailbox[to]->landed(a, sim_now() + from_sc(d) + kWire + kMemory +
                                 (extra == extra_memory.end() ? Time{} : extra->second));
      gp.set_response_status(tlm::TLM_OK_RESPONSE);
      return tlm::TLM_COMPLETED;
    }
    if (drop_doorbells && a.mailbox == MailboxWrite::Doorbell) {
      gp.set_response_status(tlm::TLM_OK_RESPONSE);
      return tlm::TLM_COMPLETED;
    }
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

MailboxConfig config(MailboxTransport t) {
  MailboxConfig c;
  c.transport = t;
  return c;
}

struct Bench {
  Dispatcher events{"events"};
  PacketPool pool;
  MailboxConfig cfg;
  FirmwareMailbox a;
  FirmwareMailbox b;
  Wire wire{"wire"};
  std::vector<Interrupt> interrupts;  // at b
  std::vector<Writeback> writebacks;  // at a
  int flushes = 0;                    // at b
  // The base protocol on each of the mailboxes' sockets (commands are posted writes).
  std::vector<std::unique_ptr<test::BaseProtocolChecker>> outs;  // a's by plane, then b's
  test::BaseProtocolChecker a_in{"a_in"}, b_in{"b_in"};
  explicit Bench(MailboxTransport t = MailboxTransport::NpaWrites, unsigned planes = 1,
                 NpaAddrMode mode = NpaAddrMode::SourceAliasing)
      : cfg(config(t)),
        a("gpu0_mailbox", cfg, 0, mode, pool, events),
        b("gpu1_mailbox", cfg, 1, mode, pool, events) {
    for (FirmwareMailbox* m : {&a, &b})
      for (unsigned p = 0; p < planes; ++p) {
        const std::string n = std::string(m == &a ? "a" : "b") + "_out" + std::to_string(p);
        outs.push_back(std::make_unique<test::BaseProtocolChecker>(n.c_str()));
        m->to_ports.bind(outs.back()->in);
        outs.back()->out.bind(m == &a ? wire.in0 : wire.in1);
      }
    wire.out[0].bind(a_in.in);
    a_in.out.bind(a.from_ports);
    wire.out[1].bind(b_in.in);
    b_in.out.bind(b.from_ports);
    wire.mailbox[0] = &a;
    wire.mailbox[1] = &b;
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
  // What a write costs until the receiver's firmware can read it (none for a control packet).
  Time to_memory() const {
    return cfg.transport == MailboxTransport::NpaWrites ? kWire + kMemory : kWire;
  }
  ~Bench() {
    for (const auto& c : outs)
      test::check_clean(*c);
    for (const auto* c : {&a_in, &b_in})
      test::check_clean(*c);
    CHECK(outs.front()->begun() > 0);
  }
};

// The variants a test runs in, each its own test case (one elaboration per process).
struct NpaWrites {
  static constexpr MailboxTransport value = MailboxTransport::NpaWrites;
};
struct ControlClass {
  static constexpr MailboxTransport value = MailboxTransport::ControlClass;
};
struct Aliasing {
  static constexpr NpaAddrMode value = NpaAddrMode::SourceAliasing;
};
struct Identification {
  static constexpr NpaAddrMode value = NpaAddrMode::SourceIdentification;
};

FwCommand message(std::uint32_t x) {
  FwCommand c;
  c.kind = FwCommandKind::Int;
  c.dw = {x, x + 1, x + 2, x + 3};
  return c;
}

}  // namespace

TEMPLATE_TEST_CASE(
    "a command crosses to the receiver's ring, its firmware reports it consumed to the sender "
    "and interrupts the receiver's driver, each after its latency",
    "[models][mailbox]", NpaWrites, ControlClass) {
  Bench tb(TestType::value);
  const Time t0 = Time::us(1);
  tb.send_at(t0, message(7));
  tb.events.run_for(Time::us(20));

  REQUIRE(tb.results.size() == 1);
  CHECK(tb.results[0] == std::optional<std::uint32_t>(0));
  // The firmware takes the command once it is in memory (npa_writes: the slot and write
  // pointer have landed; the doorbell came before).
  const Time consumed = t0 + tb.to_memory() + tb.cfg.firmware_latency;
  REQUIRE(tb.writebacks.size() == 1);
  CHECK(tb.writebacks[0].at == consumed + tb.to_memory());
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

TEMPLATE_TEST_CASE(
    "the receiver's firmware takes commands one at a time, in order, and a TLB shootdown "
    "flushes instead of interrupting",
    "[models][mailbox]", NpaWrites, ControlClass) {
  Bench tb(TestType::value);
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
  const Time in = t0 + tb.to_memory();
  CHECK(tb.interrupts[0].at == in + fw + tb.cfg.interrupt_latency);
  CHECK(tb.interrupts[1].at == in + fw * 2 + tb.cfg.interrupt_latency);
  CHECK(tb.flushes == 1);
  REQUIRE(tb.writebacks.size() == 3);
  // The shootdown is on its own ring and costs the flush too.
  CHECK(tb.writebacks[2].ring == 1);
  CHECK(tb.writebacks[2].at == in + fw * 3 + tb.cfg.tlb_invalidate_latency + tb.to_memory());
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

TEMPLATE_TEST_CASE(
    "npa_writes: each message is a ring-slot, a write-pointer and a doorbell write, posted in "
    "the data classes at the ring's NPA addresses, each message on the next plane in turn",
    "[models][mailbox][transport]", Aliasing, Identification) {
  const NpaAddrMode mode = TestType::value;
  Bench tb(MailboxTransport::NpaWrites, 2, mode);
  tb.send_at(Time::us(1), message(1));
  tb.send_at(Time::us(1), message(2));
  tb.events.run_for(Time::us(20));
  REQUIRE(tb.interrupts.size() == 2);
  REQUIRE(tb.writebacks.size() == 2);
  std::vector<Sent> from_a, from_b;
  for (const Sent& s : tb.wire.sent)
    (s.from == 0 ? from_a : from_b).push_back(s);
  REQUIRE(from_a.size() == 6);
  for (std::uint32_t m = 0; m < 2; ++m) {
    const Sent* w = &from_a[3 * m];
    CHECK(w[0].kind == MailboxWrite::RingSlot);
    CHECK(w[0].npa == ring_slot_npa(mode, 1, 0, 0, m));
    CHECK(w[1].kind == MailboxWrite::WritePointer);
    CHECK(w[1].npa == pointer_npa(mode, 1, 0, 0, false));
    CHECK(w[2].kind == MailboxWrite::Doorbell);
    CHECK(w[2].npa == doorbell_npa(1, m, 0));
    for (int i = 0; i < 3; ++i) {
      CHECK(w[i].packet == PacketKind::Request);
      CHECK(w[i].plane == m);
    }
  }
  // The receiver's firmware answers each through the plane its command came on.
  REQUIRE(from_b.size() == 2);
  for (std::uint32_t m = 0; m < 2; ++m) {
    CHECK(from_b[m].kind == MailboxWrite::Writeback);
    CHECK(from_b[m].packet == PacketKind::Request);
    CHECK(from_b[m].npa == pointer_npa(mode, 0, 1, 0, true));
    CHECK(from_b[m].plane == m);
  }
  // Every address lies in the receiver's own NPA window (bits 50:41), on its ring pages.
  CHECK(npa_accel(from_a[0].npa) == 1);
  CHECK(npa_accel(from_b[0].npa) == 0);
}

TEST_CASE(
    "control_class (what-if): a message is a command and a doorbell as control packets on "
    "plane 0 only",
    "[models][mailbox][transport]") {
  Bench tb(MailboxTransport::ControlClass, 2);
  tb.send_at(Time::us(1), message(1));
  tb.send_at(Time::us(1), message(2));
  tb.events.run_for(Time::us(20));
  REQUIRE(tb.interrupts.size() == 2);
  REQUIRE(tb.wire.sent.size() == 6);  // 2 x (command, doorbell) and 2 write-backs
  for (const Sent& s : tb.wire.sent) {
    CHECK(s.packet == PacketKind::Control);
    CHECK(s.plane == 0);
    CHECK(s.kind != MailboxWrite::WritePointer);
  }
}

TEST_CASE(
    "npa_writes: the firmware takes a command only once its slot has landed in memory, however "
    "early the doorbell came",
    "[models][mailbox][transport]") {
  Bench tb;
  tb.wire.extra_memory[MailboxWrite::RingSlot] = Time::us(3);
  tb.send_at(Time::us(1), message(5));
  tb.events.run_for(Time::us(20));
  REQUIRE(tb.interrupts.size() == 1);
  CHECK(tb.interrupts[0].at == Time::us(1) + kWire + kMemory + Time::us(3) +
                                   tb.cfg.firmware_latency + tb.cfg.interrupt_latency);
}

TEST_CASE("npa_writes: the firmware takes a command only once its write pointer has landed",
          "[models][mailbox][transport]") {
  Bench tb;
  tb.wire.extra_memory[MailboxWrite::WritePointer] = Time::us(2);
  tb.send_at(Time::us(1), message(5));
  tb.events.run_for(Time::us(20));
  REQUIRE(tb.interrupts.size() == 1);
  CHECK(tb.interrupts[0].at == Time::us(1) + kWire + kMemory + Time::us(2) +
                                   tb.cfg.firmware_latency + tb.cfg.interrupt_latency);
}

TEST_CASE("npa_writes: with no doorbell, the firmware takes nothing",
          "[models][mailbox][transport]") {
  Bench tb;
  tb.wire.drop_doorbells = true;
  tb.send_at(Time::us(1), message(5));
  tb.events.run_for(Time::us(20));
  CHECK(tb.interrupts.empty());
  CHECK(tb.writebacks.empty());
  CHECK(tb.a.in_flight(1, 0) == 1);
}

TEMPLATE_TEST_CASE(
    "a sender that reset ignores write-backs for what it sent before, and its next command "
    "(UPDATE_WB) makes the receiver take up its ring afresh",
    "[models][mailbox][transport]", NpaWrites, ControlClass) {
  Bench tb(TestType::value);
  tb.send_at(Time::us(1), message(1));
  tb.send_at(Time::us(1), message(2));
  // Sender 0 resets after both commands are out, before their write-backs come back.
  TimedQueue<int> resets{tb.events, "testbench.resets", [&tb](int) { tb.a.reset(); }};
  resets.push(Time::us(1) + Time::ns(100), 0);
  tb.send_at(Time::us(5), message(3));
  tb.events.run_for(Time::us(30));
  // The receiver took all three (two of the old generation, then seq 0 of the new).
  REQUIRE(tb.interrupts.size() == 3);
  CHECK(tb.interrupts[2].cmd.dw[0] == 3);
  // Only the new command's write-back counts: seq 0, and nothing left in flight.
  REQUIRE(tb.writebacks.size() == 1);
  CHECK(tb.writebacks[0].seq == 0);
  CHECK(tb.writebacks[0].at > Time::us(5));
  CHECK(tb.a.in_flight(1, 0) == 0);
  REQUIRE(tb.results.size() == 3);
  CHECK(tb.results[2] == std::optional<std::uint32_t>(0));
}

TEMPLATE_TEST_CASE(
    "a receiver that reset takes up each sender's ring from the first command it sees after",
    "[models][mailbox][transport]", NpaWrites, ControlClass) {
  Bench tb(TestType::value);
  tb.send_at(Time::us(1), message(1));  // seq 0, with UPDATE_WB
  // The receiver resets at 10 us (its rings' state gone) and is up again at once; the sender
  // goes on with seq 1, no UPDATE_WB.
  TimedQueue<int> resets{tb.events, "testbench.resets", [&tb](int) {
                           tb.b.reset();
                           tb.b.set_down(false);
                         }};
  resets.push(Time::us(10), 0);
  tb.send_at(Time::us(20), message(2));
  tb.events.run_for(Time::us(40));
  REQUIRE(tb.interrupts.size() == 2);
  CHECK(tb.interrupts[1].cmd.dw[0] == 2);
  CHECK(tb.interrupts[1].at > Time::us(20));
  REQUIRE(tb.writebacks.size() == 2);
  CHECK(tb.writebacks[1].seq == 1);
  CHECK(tb.a.in_flight(1, 0) == 0);
}

TEST_CASE(
    "lost commands hold their ring slots only until a later command's write-back moves the "
    "read pointer past them",
    "[models][mailbox][enospc]") {
  Bench tb;
  tb.b.drop_next(5);  // the receiver's firmware loses the next five: no write-back for them
  for (std::uint32_t i = 0; i < 5; ++i)
    tb.send_at(Time::us(1), message(i));
  tb.events.run_for(Time::us(20));
  CHECK(tb.writebacks.empty());
  CHECK(tb.a.in_flight(1, 0) == 5);
  // The next one is taken and reported consumed: the driver reads the read pointer, so the
  // five before it are behind it too.
  tb.send_at(Time::us(25), message(9));
  tb.events.run_for(Time::us(40));
  REQUIRE(tb.writebacks.size() == 1);
  CHECK(tb.writebacks[0].seq == 5);
  CHECK(tb.a.in_flight(1, 0) == 0);
  // So a ring never fills up with lost commands while any command still gets through: 62
  // more lost, then one that lands, and the ring is empty again.
  tb.b.drop_next(tb.cfg.ring_slots - 2);
  for (std::uint32_t i = 0; i + 2 < tb.cfg.ring_slots; ++i)
    tb.send_at(Time::us(50), message(i));
  tb.events.run_for(Time::us(80));
  CHECK(tb.a.in_flight(1, 0) == tb.cfg.ring_slots - 2);
  tb.send_at(Time::us(90), message(1));
  tb.events.run_for(Time::us(120));
  CHECK(tb.a.in_flight(1, 0) == 0);
  REQUIRE(tb.results.size() == tb.cfg.ring_slots + 5);
  CHECK(tb.results.back().has_value());
}

TEST_CASE("a firmware told to answer with an error status writes that status back, not 0",
          "[models][mailbox]") {
  Bench tb;
  for (std::uint32_t status = 1; status <= 9; ++status) {
    INFO("status " << status);
    const Time t = Time::us(40 * (status - 1) + 1);
    tb.b.answer_with_error(status, 1);
    tb.send_at(t, message(status));
    tb.send_at(t + Time::us(1), message(100 + status));
    tb.events.run_for(Time::us(40));
    REQUIRE(tb.writebacks.size() == 2 * status);
    CHECK(tb.writebacks[2 * status - 2].status == status);  // the sender's driver: ECOMM
    CHECK(tb.writebacks[2 * status - 1].status == 0);       // the next carried out
    REQUIRE(tb.interrupts.size() == status);                // the first was not
    CHECK(tb.interrupts.back().cmd.dw[0] == 100 + status);
  }
}
