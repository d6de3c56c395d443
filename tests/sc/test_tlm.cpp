// Inside a GPU, podsim's modules speak the TLM-2.0 base protocol: the NPA MMU, VRAM and GpuVm
// run behind a base-protocol checker on every socket; a standard TLM target (a b_transport
// memory behind the simple socket's adapter) stands in for VRAM; an initiator that takes its
// time to end responses is served one response at a time; a blocking initiator with plain
// payloads reads and writes VRAM, and reaches it through the NPA MMU. And the checker itself
// reports the breaches it exists to catch.
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <array>
#include <catch2/catch.hpp>
#include <cctype>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <tuple>

#include "models/gpuvm/gpuvm.hpp"
#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "tests/support/fabric_probe.hpp"
#include "tests/support/in_process_pod.hpp"
#include "tests/support/tlm_checker.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;
using podsim::test::BaseProtocolChecker;
using Requester = podsim::test::TlmRequester;

namespace {

constexpr AccelId kSelf = 7;

// A standard TLM target: a plain memory with b_transport only. The simple target socket's
// adapter turns the base protocol's non-blocking calls into blocking ones (TLM_ACCEPTED to
// BEGIN_REQ, BEGIN_RESP when b_transport returns), so it takes one request at a time.
struct PlainMemory : sc_core::sc_module {
  tlm_utils::simple_target_socket<PlainMemory> in{"in"};
  std::map<std::uint64_t, unsigned char> bytes;
  std::uint64_t calls = 0;
  explicit PlainMemory(sc_core::sc_module_name n) : sc_module(n) {
    in.register_b_transport(this, &PlainMemory::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& d) {
    ++calls;
    unsigned char* p = gp.get_data_ptr();
    for (unsigned i = 0; i < gp.get_data_length(); ++i) {
      if (gp.is_read())
        p[i] = bytes[gp.get_address() + i];
      else
        bytes[gp.get_address() + i] = p[i];
    }
    d += sc_core::sc_time(20, sc_core::SC_NS);
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
  }
};

// A port's requests into the NPA MMU, and the NPA MMU into VRAM, a checker on each binding.
struct MmuBench {
  Dispatcher events{"events"};
  VramConfig vcfg;
  Vram vram{"vram", vcfg, events, 1};
  NpaMmu mmu{"npa_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, kSelf, nullptr, events};
  Requester port{"port", events};
  BaseProtocolChecker to_mmu{"check_port_mmu"}, to_vram{"check_mmu_vram"};
  MmuBench() {
    port.out.bind(to_mmu.in);
    to_mmu.out.bind(mmu.from_ports);
    mmu.to_vram.bind(to_vram.in);
    to_vram.out.bind(vram.in);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  auto parts() { return std::tie(mmu, port, to_mmu, to_vram); }
};

std::uint64_t npa_of(std::uint64_t window_page, std::uint64_t offset = 0) {
  return (static_cast<std::uint64_t>(kSelf) << 41) | (window_page << 12) | offset;
}

}  // namespace

TEST_CASE(
    "NPA MMU and VRAM behind the base-protocol checker: loads, stores, posted stores, "
    "atomics, refusals",
    "[sc][tlm]") {
  MmuBench b;
  auto [mmu, port, to_mmu, to_vram] = b.parts();

  mmu.map_page(512, 40, 0xA);
  mmu.map_page(513, 41, 0xA);
  mmu.map_page(514, 42, 0xA);
  mmu.set_retry(514, true);
  // A burst at one time (requests back to back on one socket), then more later.
  std::vector<std::uint64_t> answered;
  for (std::uint64_t i = 0; i < 8; ++i)
    answered.push_back(port.send(Time::ns(10), AccessOp::Read, npa_of(512, i * 64)));
  const auto posted = port.send(Time::ns(10), AccessOp::Write, npa_of(513), 64, 0x1111, true);
  const auto store = port.send(Time::ns(10), AccessOp::Write, npa_of(513, 64), 64, 0x2222, false);
  const auto unmapped = port.send(Time::ns(10), AccessOp::Read, npa_of(600));
  const auto retried = port.send(Time::ns(10), AccessOp::Read, npa_of(514));
  const auto read_posted = port.send(Time::us(1), AccessOp::Read, npa_of(513));
  const auto atomic = port.send(Time::us(1), AccessOp::Atomic, npa_of(513, 64), 64, 5, false);
  const auto read_atomic = port.send(Time::us(2), AccessOp::Read, npa_of(513, 64));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));

  test::check_clean(to_mmu);
  test::check_clean(to_vram);
  CHECK(to_mmu.begun() == 15);
  CHECK(to_vram.begun() == 13);        // all but the refused two
  REQUIRE(port.answers.size() == 14);  // all but the posted store
  CHECK_FALSE(port.answers.count(posted));
  for (auto id : answered)
    CHECK(port.answers.at(id).status == AccessStatus::Ok);
  CHECK(port.answers.at(store).status == AccessStatus::Ok);
  CHECK(port.answers.at(unmapped).status == AccessStatus::RemoteFault);
  CHECK(port.answers.at(retried).status == AccessStatus::Retry);
  CHECK(port.lane(read_posted) == 0x1111);  // the posted store landed
  CHECK(port.lane(atomic) == 0x2222);       // fetch: the old value
  CHECK(port.lane(read_atomic) == 0x2227);  // and the sum stayed
  CHECK(port.in_use() == 0);                // every reference given back
}

TEST_CASE("A standard TLM target (b_transport memory) stands in for VRAM behind the checker",
          "[sc][tlm]") {
  Dispatcher events("events");
  NpaMmu mmu("npa_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, kSelf, nullptr, events);
  Requester port("port", events);
  PlainMemory memory("memory");
  BaseProtocolChecker to_mmu("check_port_mmu"), to_memory("check_mmu_memory");
  port.out.bind(to_mmu.in);
  to_mmu.out.bind(mmu.from_ports);
  mmu.to_vram.bind(to_memory.in);
  to_memory.out.bind(memory.in);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  mmu.map_page(512, 40, 0xA);
  std::vector<std::uint64_t> stores, loads;
  for (std::uint64_t i = 0; i < 6; ++i)  // all at once: the memory takes one at a time
    stores.push_back(
        port.send(Time::ns(10), AccessOp::Write, npa_of(512, i * 64), 64, 100 + i, i % 2 == 0));
  for (std::uint64_t i = 0; i < 6; ++i)
    loads.push_back(port.send(Time::us(1), AccessOp::Read, npa_of(512, i * 64)));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));

  test::check_clean(to_mmu);
  test::check_clean(to_memory);
  CHECK(memory.calls == 12);
  // The adapter answers BEGIN_REQ with TLM_ACCEPTED: each request waited for the one before.
  CHECK(to_memory.accepted_requests() == 12);
  for (std::uint64_t i = 0; i < 6; ++i) {
    CHECK(port.answers.count(stores[i]) == (i % 2 == 0 ? 0u : 1u));  // posted: no answer
    REQUIRE(port.answers.count(loads[i]) == 1);
    CHECK(port.lane(loads[i]) == 100 + i);
    CHECK(memory.bytes.at(40 * 4096 + i * 64) == 100 + i);  // at the translated address
  }
  // Served one after another, 20 ns each: the last store's answer 6 x 20 ns after the first.
  CHECK(port.answers.at(stores[5]).at - port.answers.at(stores[1]).at == Time::ns(80));
  CHECK(port.in_use() == 0);
}

TEST_CASE("An initiator slow to end responses gets them one at a time (response exclusion)",
          "[sc][tlm]") {
  MmuBench b;
  auto [mmu, port, to_mmu, to_vram] = b.parts();
  port.end_resp_after = Time::ns(50);

  mmu.map_page(512, 40, 0xA);
  for (std::uint64_t i = 0; i < 5; ++i)
    port.send(Time::ns(10), AccessOp::Read, npa_of(512, i * 64));
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));

  test::check_clean(to_mmu);
  test::check_clean(to_vram);
  REQUIRE(port.response_windows.size() == 5);
  for (std::size_t i = 1; i < 5; ++i) {
    CHECK(port.response_windows[i].first >= port.response_windows[i - 1].second);
    CHECK(port.response_windows[i].second - port.response_windows[i].first == Time::ns(50));
  }
  CHECK(port.in_use() == 0);
}

TEST_CASE("GpuVm behind the checker: local, remote, posted and faulting accesses", "[sc][tlm]") {
  Dispatcher events("events");
  VramConfig vcfg;
  Vram vram("vram", vcfg, events, 1);
  GpuVm gpuvm("gpuvm", GpuVmConfig{}, kSelf, 1, Bytes(4096), events, 1);
  Requester agent("agent", events);
  // Where remote accesses go: the NPA MMU and VRAM of another GPU, straight through.
  NpaMmu far_mmu("far_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, 9, nullptr, events);
  Vram far_vram("far_vram", vcfg, events, 2);
  BaseProtocolChecker to_gpuvm("check_agent_gpuvm"), local("check_gpuvm_vram"),
      remote("check_gpuvm_port"), far("check_far_mmu_vram");
  agent.out.bind(to_gpuvm.in);
  to_gpuvm.out.bind(gpuvm.from_agent);
  gpuvm.to_vram.bind(local.in);
  local.out.bind(vram.in);
  gpuvm.to_ports.bind(remote.in);
  remote.out.bind(far_mmu.from_ports);
  far_mmu.to_vram.bind(far.in);
  far.out.bind(far_vram.in);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);

  constexpr std::uint16_t kVmid = 0;
  Pte local_pte;
  local_pte.target = PteTarget::Vram;
  local_pte.writable = true;
  local_pte.frame = 40;
  gpuvm.map_page(kVmid, 0x100, local_pte);
  Pte remote_pte;
  remote_pte.target = PteTarget::Npa;
  remote_pte.writable = true;
  remote_pte.frame = (9ull << 29) | 512;  // gpu9's window page 512
  gpuvm.map_page(kVmid, 0x200, remote_pte);
  far_mmu.map_page(512, 70, 0xB);

  const std::uint64_t lva = 0x100ull << 12, rva = 0x200ull << 12;
  const auto l_store = agent.send(Time::ns(10), AccessOp::Write, lva, 64, 0x11, false);
  const auto r_posted = agent.send(Time::ns(10), AccessOp::Write, rva, 64, 0x22, true);
  const auto fault = agent.send(Time::ns(10), AccessOp::Read, 0x300ull << 12);
  const auto posted_fault = agent.send(Time::ns(10), AccessOp::Write, 0x300ull << 12, 64, 0, true);
  const auto l_load = agent.send(Time::us(1), AccessOp::Read, lva);
  const auto r_load = agent.send(Time::us(1), AccessOp::Read, rva);
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));

  for (const auto* c : {&to_gpuvm, &local, &remote, &far})
    test::check_clean(*c);
  CHECK(to_gpuvm.begun() == 6);
  CHECK(local.begun() == 2);
  CHECK(remote.begun() == 2);
  CHECK(far.begun() == 2);
  REQUIRE(agent.answers.size() == 4);  // posted stores get none, faulting or not
  CHECK_FALSE(agent.answers.count(r_posted));
  CHECK_FALSE(agent.answers.count(posted_fault));
  CHECK(agent.answers.at(l_store).status == AccessStatus::Ok);
  CHECK(agent.answers.at(fault).status == AccessStatus::Fault);
  CHECK(agent.lane(l_load) == 0x11);
  CHECK(agent.lane(r_load) == 0x22);
  CHECK(agent.in_use() == 0);
}

namespace {
// Drives the checker by hand, breaking the rules on purpose.
struct RawInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<RawInitiator> out{"out"};
  explicit RawInitiator(sc_core::sc_module_name n) : sc_module(n) {
    out.register_nb_transport_bw(this, &RawInitiator::bw);
  }
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase ph) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    return out->nb_transport_fw(gp, ph, d);
  }
  // Takes every response and never ends it (TLM_ACCEPTED, no END_RESP follows).
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    return tlm::TLM_ACCEPTED;
  }
};
struct RawTarget : sc_core::sc_module {
  tlm_utils::simple_target_socket<RawTarget> in{"in"};
  tlm::tlm_sync_enum answer = tlm::TLM_ACCEPTED;
  explicit RawTarget(sc_core::sc_module_name n) : sc_module(n) {
    in.register_nb_transport_fw(this, &RawTarget::fw);
  }
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) {
    return answer;
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase ph) {
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    return in->nb_transport_bw(gp, ph, d);
  }
};

bool saw(const BaseProtocolChecker& c, const std::string& what) {
  for (const auto& v : c.violations())
    if (v.find(what) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("The checker reports breaches of the base protocol", "[sc][tlm]") {
  RawInitiator ini("ini");
  RawTarget tgt("tgt");
  BaseProtocolChecker c("checker");
  ini.out.bind(c.in);
  c.out.bind(tgt.in);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  test::PacketMaker packets;
  auto& a = packets.make(PacketKind::Request, AccessOp::Read, 64);
  auto& b = packets.make(PacketKind::Request, AccessOp::Read, 64);
  auto& x = packets.make(PacketKind::Request, AccessOp::Read, 64);

  ini.fw(a, tlm::BEGIN_REQ);  // accepted: a awaits END_REQ
  CHECK(c.violations().empty());
  ini.fw(b, tlm::BEGIN_REQ);
  CHECK(saw(c, "request exclusion rule"));
  tgt.bw(a, tlm::BEGIN_RESP);  // status still incomplete
  CHECK(saw(c, "TLM_INCOMPLETE_RESPONSE at BEGIN_RESP"));
  b.set_response_status(tlm::TLM_OK_RESPONSE);
  tgt.bw(b, tlm::BEGIN_RESP);  // a's response still awaits END_RESP
  CHECK(saw(c, "response exclusion rule"));
  tgt.bw(x, tlm::END_REQ);
  CHECK(saw(c, "END_REQ on the backward path for no open transaction"));
  ini.fw(a, tlm::END_REQ);
  CHECK(saw(c, "END_REQ sent on the forward path"));
  x.set_response_status(tlm::TLM_OK_RESPONSE);
  ini.fw(x, tlm::BEGIN_REQ);
  CHECK(saw(c, "BEGIN_REQ with a response status other than TLM_INCOMPLETE_RESPONSE"));
  CHECK(c.open() == 3);  // a, b and x: none ended
}

namespace {
// A loosely-timed initiator: an SC_THREAD calling b_transport with plain payloads (no memory
// manager, no podsim extension), waiting out each call's delay.
struct BlockingInitiator : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<BlockingInitiator> out{"out"};
  struct Done {
    Time at;
    tlm::tlm_response_status status;
    std::uint64_t value;
  };
  std::vector<Done> done;
  std::function<void(BlockingInitiator&)> script;
  SC_HAS_PROCESS(BlockingInitiator);
  explicit BlockingInitiator(sc_core::sc_module_name n) : sc_module(n) { SC_THREAD(run); }
  void run() { script(*this); }
  // One access at the current time; returns when its delay has passed.
  void access(tlm::tlm_command cmd, std::uint64_t addr, std::uint64_t value, std::uint32_t len = 64,
              unsigned char* byte_enables = nullptr) {
    tlm::tlm_generic_payload gp;
    std::array<unsigned char, 64> data{};
    for (std::uint32_t off = 0; off + 8 <= len; off += 8)
      std::memcpy(data.data() + off, &value, 8);
    gp.set_command(cmd);
    gp.set_address(addr);
    gp.set_data_ptr(data.data());
    gp.set_data_length(len);
    gp.set_streaming_width(len);
    gp.set_byte_enable_ptr(byte_enables);
    gp.set_byte_enable_length(byte_enables ? len : 0);
    gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    out->b_transport(gp, d);
    sc_core::wait(d);
    std::uint64_t first;
    std::memcpy(&first, data.data(), 8);
    done.push_back({sim_now(), gp.get_response_status(), first});
  }
};
}  // namespace

TEST_CASE("A blocking initiator with plain payloads reads and writes VRAM through b_transport",
          "[sc][tlm]") {
  Dispatcher events("events");
  VramConfig vcfg;
  Vram vram("vram", vcfg, events, 1);
  BlockingInitiator ini("ini");
  ini.out.bind(vram.in);
  unsigned char enables[64] = {};
  ini.script = [&](BlockingInitiator& i) {
    sc_core::wait(sc_core::sc_time(100, sc_core::SC_NS));
    i.access(tlm::TLM_WRITE_COMMAND, 0x4000, 0x77);
    i.access(tlm::TLM_READ_COMMAND, 0x4000, 0);
    i.access(tlm::TLM_READ_COMMAND, vcfg.capacity.count(), 0);  // past the end
    i.access(tlm::TLM_WRITE_COMMAND, 0x4000, 1, 64, enables);   // byte enables: not taken
    i.access(tlm::TLM_READ_COMMAND, 0x4000, 0);                 // unchanged by that
  };
  sc_core::sc_start(sc_core::sc_time(5, sc_core::SC_US));

  REQUIRE(ini.done.size() == 5);
  const Time one = vcfg.channel_bandwidth.transfer_time(Bytes(64)) + vcfg.access_latency;
  CHECK(ini.done[0].status == tlm::TLM_OK_RESPONSE);
  CHECK(ini.done[0].at == Time::ns(100) + one);
  CHECK(ini.done[1].status == tlm::TLM_OK_RESPONSE);
  CHECK(ini.done[1].at == Time::ns(100) + one + one);
  CHECK(ini.done[1].value == 0x77);
  CHECK(ini.done[2].status == tlm::TLM_ADDRESS_ERROR_RESPONSE);
  CHECK(ini.done[3].status == tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
  CHECK(ini.done[4].value == 0x77);
}

TEST_CASE("A blocking access through the NPA MMU is translated and served, or refused",
          "[sc][tlm]") {
  Dispatcher events("events");
  VramConfig vcfg;
  Vram vram("vram", vcfg, events, 1);
  NpaMmu mmu("npa_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, kSelf, nullptr, events);
  BlockingInitiator plain("plain");
  test::PacketMaker packets;  // payloads with podsim's Access
  plain.out.bind(mmu.from_ports);
  mmu.to_vram.bind(vram.in);
  struct Outcome {
    AccessStatus status;
    tlm::tlm_response_status response;
    std::uint64_t pa;
  };
  std::vector<Outcome> outcomes;
  plain.script = [&](BlockingInitiator& i) {
    sc_core::wait(sc_core::sc_time(10, sc_core::SC_NS));
    for (std::uint64_t npa : {npa_of(512, 128), npa_of(777)}) {
      auto& gp = packets.make(PacketKind::Request, AccessOp::Read, 64);
      access_of(gp).src = 3;
      access_of(gp).npa = npa;
      gp.set_command(tlm::TLM_READ_COMMAND);
      gp.set_address(npa);
      gp.set_data_length(64);
      sc_core::sc_time d = sc_core::SC_ZERO_TIME;
      i.out->b_transport(gp, d);
      sc_core::wait(d);
      outcomes.push_back({access_of(gp).status, gp.get_response_status(), access_of(gp).pa});
      gp.release();
    }
    i.access(tlm::TLM_READ_COMMAND, npa_of(512), 0);  // a plain payload: whose window?
  };
  mmu.map_page(512, 40, 0xA);
  sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_US));

  REQUIRE(outcomes.size() == 2);
  CHECK(outcomes[0].status == AccessStatus::Ok);
  CHECK(outcomes[0].response == tlm::TLM_OK_RESPONSE);
  CHECK(outcomes[0].pa == 40 * 4096 + 128);
  CHECK(outcomes[1].status == AccessStatus::RemoteFault);
  CHECK(outcomes[1].response == tlm::TLM_ADDRESS_ERROR_RESPONSE);
  REQUIRE(plain.done.size() == 1);
  CHECK(plain.done[0].status == tlm::TLM_GENERIC_ERROR_RESPONSE);
  CHECK(packets.pool.in_use() == 0);
}

namespace {
// A checker on every TLM binding of every GPU of a pod.
struct CheckerTap : SocketTap {
  std::vector<std::unique_ptr<BaseProtocolChecker>> checkers;
  Ends tap(const std::string& binding) override {
    std::string name = "check";
    for (char c : binding)
      name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    checkers.push_back(std::make_unique<BaseProtocolChecker>(name.c_str()));
    return {&checkers.back()->in, &checkers.back()->out};
  }
};
}  // namespace

TEST_CASE("A whole pod keeps the base protocol on every TLM binding of every GPU", "[sc][tlm]") {
  CheckerTap tap;
  // Loads, stores (posted too) and atomics, local and remote, over two planes; the driver's
  // setup (export, import: control commands through the mailboxes) first.
  Pod pod("pod",
          test::config_with(
              {"pod.gpus=4", "fabric.planes=2", "workload.traffic.accesses=300",
               "workload.traffic.read_fraction=0.5", "workload.traffic.posted_writes=true",
               "workload.traffic.atomic_fraction=0.1", "workload.traffic.local_fraction=0.2"}),
          &tap);
  pod.run();
  // Per GPU: agent->GpuVm, GpuVm->VRAM, NPA MMU->VRAM, and per plane GpuVm->port,
  // port->NPA MMU, mailbox->port and port->mailbox.
  REQUIRE(tap.checkers.size() == 4 * (3 + 2 * 4));
  std::uint64_t begun = 0;
  for (const auto& c : tap.checkers) {
    test::check_clean(*c);
    begun += c->begun();
  }
  CHECK(begun > 4 * 300);
  CHECK(pod.accesses_completed() == 4 * 300);
}
