// The NPA MMU on its own: translation, retry and fault answers, and the invariant check that
// an access served after its importer released is reported.
#include <tlm_utils/simple_initiator_socket.h>

#include <catch2/catch.hpp>
#include <map>

#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"

using namespace podsim;

namespace {
// Sends accesses into the NPA MMU as the port would, and collects the answers.
struct Requester : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Requester> out{"out"};
  PacketPool pool;
  std::map<std::uint64_t, AccessStatus> answers;  // by access id
  std::uint64_t next_id = 0;
  explicit Requester(sc_core::sc_module_name n) : sc_module(n) {
    out.register_nb_transport_bw(this, &Requester::bw);
  }
  std::uint64_t send(AccelId src, std::uint64_t npa) {
    auto& gp = pool.acquire();
    Access& a = access_of(gp);
    a.id = next_id++;
    a.src = src;
    a.npa = npa;
    a.size = 64;
    a.op = AccessOp::Read;
    tlm::tlm_phase ph = tlm::BEGIN_REQ;
    sc_core::sc_time d = sc_core::SC_ZERO_TIME;
    out->nb_transport_fw(gp, ph, d);
    return a.id;
  }
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&, sc_core::sc_time&) {
    answers[access_of(gp).id] = access_of(gp).status;
    gp.release();
    return tlm::TLM_COMPLETED;
  }
};
}  // namespace

TEST_CASE("NPA MMU: served, retried, refused, served after release is reported",
          "[sc][npa_mmu][invariants]") {
  InvariantLog log;
  VramConfig vcfg;
  Dispatcher events("events");
  Vram vram("vram", vcfg, events, 1);
  NpaMmu mmu("npa_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, 7, &log, events);
  Requester req("req");
  req.out.bind(mmu.from_ports);
  mmu.to_vram.bind(vram.in);

  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaboration done: the sockets are bound
  const std::uint64_t tag = 0xABCD'0007;
  mmu.map_page(512, 40, tag);
  mmu.map_page(513, 90, tag);
  const std::uint64_t npa = (7ull << 41) | (512ull << 12);
  const auto served = req.send(3, npa);
  const auto second_page = req.send(3, npa + 4096 + 64);
  const auto unmapped = req.send(3, npa + 2 * 4096);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  mmu.set_retry(512, true);  // as a revoke does: PTE.X = 1, then a TLB flush
  mmu.flush_tlb();
  const auto retried = req.send(3, npa);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  mmu.set_retry(512, false);
  mmu.flush_tlb();
  mmu.mark_released(tag, 3);
  const auto other = req.send(5, npa);  // another importer: fine
  const auto stale = req.send(3, npa);  // importer 3 released it: a violation
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));

  REQUIRE(req.answers.size() == 6);
  CHECK(req.answers[served] == AccessStatus::Ok);
  CHECK(req.answers[second_page] == AccessStatus::Ok);
  CHECK(req.answers[unmapped] == AccessStatus::RemoteFault);
  CHECK(req.answers[retried] == AccessStatus::Retry);
  CHECK(req.answers[other] == AccessStatus::Ok);
  CHECK(req.answers[stale] == AccessStatus::Ok);  // served, and reported
  REQUIRE(log.violations().size() == 1);
  CHECK_THAT(log.violations()[0].what,
             Catch::Contains("gpu7 served an access from gpu3") && Catch::Contains("abcd0007"));
  CHECK(mmu.any_mapped(512, 2));
  mmu.unmap_page(512);
  mmu.unmap_page(513);
  CHECK_FALSE(mmu.any_mapped(512, 2));
}
