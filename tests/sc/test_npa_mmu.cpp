// The NPA MMU on its own: translation, retry and fault answers, and the invariant check that
// an access served after its importer released is reported.
#include <catch2/catch.hpp>
#include <map>

#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"
#include "tests/support/tlm_checker.hpp"
#include "tests/support/tlm_probe.hpp"

using namespace podsim;

namespace {
// Accesses from importer `src` to `npa`, sent now, as a port would hand them over.
struct Requester : test::TlmRequester {
  using TlmRequester::TlmRequester;
  std::uint64_t send(AccelId from, std::uint64_t npa) {
    src = from;
    return TlmRequester::send(sim_now(), AccessOp::Read, npa);
  }
  AccessStatus status(std::uint64_t id) const { return answers.at(id).status; }
};
}  // namespace

TEST_CASE(
    "NPA MMU: served, retried, refused, and served to an importer after its release, or never "
    "granted, is reported",
    "[sc][npa_mmu][invariants]") {
  InvariantLog log;
  VramConfig vcfg;
  Dispatcher events("events");
  Vram vram("vram", vcfg, events, 1);
  NpaMmu mmu("npa_mmu", NpaMmuConfig{}, NpaAddrMode::SourceAliasing, 7, &log, events);
  Requester req("req", events);
  test::BaseProtocolChecker in("check_in"), out("check_out");
  req.out.bind(in.in);
  in.out.bind(mmu.from_ports);
  mmu.to_vram.bind(out.in);
  out.out.bind(vram.in);

  sc_core::sc_start(sc_core::SC_ZERO_TIME);  // elaboration done: the sockets are bound
  const std::uint64_t tag = 0xABCD'0007;
  mmu.map_page(512, 40, tag);
  mmu.map_page(513, 90, tag);
  mmu.mark_granted(tag, 3);
  mmu.mark_granted(tag, 5);
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
  const auto never = req.send(6, npa);  // importer 6 was never granted it: a violation
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));

  REQUIRE(req.answers.size() == 7);
  CHECK(req.status(served) == AccessStatus::Ok);
  CHECK(req.status(second_page) == AccessStatus::Ok);
  CHECK(req.status(unmapped) == AccessStatus::RemoteFault);
  CHECK(req.status(retried) == AccessStatus::Retry);
  CHECK(req.status(other) == AccessStatus::Ok);
  CHECK(req.status(stale) == AccessStatus::Ok);  // served, and reported
  CHECK(req.status(never) == AccessStatus::Ok);
  REQUIRE(log.violations().size() == 2);
  CHECK_THAT(log.violations()[0].what, Catch::Contains("gpu7 served an access from gpu3") &&
                                           Catch::Contains("abcd0007") &&
                                           Catch::Contains("after gpu3 had released it"));
  CHECK_THAT(log.violations()[1].what, Catch::Contains("gpu7 served an access from gpu6") &&
                                           Catch::Contains("which gpu6 was never granted"));
  // Granted again (a re-import): served rightly.
  mmu.mark_granted(tag, 3);
  const auto again = req.send(3, npa);
  sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_US));
  CHECK(req.status(again) == AccessStatus::Ok);
  CHECK(log.violations().size() == 2);
  CHECK(mmu.any_mapped(512, 2));
  mmu.unmap_page(512);
  mmu.unmap_page(513);
  CHECK_FALSE(mmu.any_mapped(512, 2));
  test::check_clean(in);
  test::check_clean(out);
}
