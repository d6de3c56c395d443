// In-process pod scenarios. Each test case runs in its own process (SystemC elaborates once).
#include <catch2/catch.hpp>
#include <cstring>
#include <set>

#include "sim/config/config_io.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/pod_config_io.hpp"

using namespace podsim;

namespace {
constexpr std::uint64_t kLocalVa = 0x0000'1000'0000'0000ull;  // a process's first mapping

std::uint64_t counter(const StatGroup& g, const std::string& name) {
  for (const Stat* s : g.stats())
    if (s->name() == name) return static_cast<const Counter*>(s)->value();
  FAIL("no counter " << name);
  return 0;
}

PodConfig config_with(std::vector<std::string> sets) {
  auto doc = config::ConfigDoc::from_text("{}", "test");
  for (const auto& s : sets)
    doc.apply_override(s);
  return read_pod_config(doc);
}
}  // namespace

TEST_CASE("one remote load goes through every module and back", "[sc][pod]") {
  Pod pod("pod", config_with({"pod.gpus=2", "workload.initiators=[0]",
                              "workload.traffic.accesses=1", "workload.traffic.read_fraction=1"}));
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.remote_accesses() == 1);
  CHECK(pod.remote_reads() == 1);
  CHECK(pod.faults() == 0);

  // Every hop of the path took part, in both directions.
  const Breakdown& b = pod.remote_breakdown();
  std::set<std::string> seen;
  for (std::size_t i = 0; i < b.part_count(); ++i)
    if (b.part_sum(i) > 0) seen.insert(b.part_name(i));
  CHECK(seen == std::set<std::string>{"req.issue", "req.gpuvm", "req.port_tx", "req.link",
                                      "req.switch", "req.port_rx", "req.npa_mmu", "req.vram",
                                      "resp.port_tx", "resp.link", "resp.switch", "resp.port_rx"});
  // The parts add up to the latency.
  double sum = 0;
  for (std::size_t i = 0; i < b.part_count(); ++i)
    sum += b.part_mean(i);
  CHECK(sum == Approx(pod.remote_latency().reported(pod.remote_latency().histogram().mean())));

  // The exporter's NPA MMU translated it and its VRAM served it.
  GpuNode& exporter = pod.gpu(1);
  CHECK(counter(exporter.npa_mmu.stat_group(), "translations") == 1);
  CHECK(counter(exporter.vram.stat_group(), "reads") == 1);
  // And at teardown everything was given back.
  CHECK(pod.invariants().ok());
  CHECK(exporter.npa_mmu.mapped_pages() == 0);
}

TEST_CASE("what an importer stores, the exporter holds in the pages behind the NPA range",
          "[sc][pod]") {
  Pod pod("pod",
          config_with({"pod.gpus=2", "workload.initiators=[0]", "workload.traffic.accesses=200",
                       "workload.traffic.read_fraction=0", "workload.teardown=false"}));
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.remote_writes() == 200);

  // Read GPU 1's buffer through GPU 1's own mapping of it (its first mapping, "local").
  GpuNode& exporter = pod.gpu(1);
  const PageTable* pt = exporter.gpuvm.page_table(1);
  REQUIRE(pt != nullptr);
  const std::uint64_t bytes = pod.config().workload.buffer_size.count();
  std::size_t written_blocks = 0;
  for (std::uint64_t off = 0; off < bytes; off += 64) {
    const Pte pte = pt->lookup((kLocalVa + off) >> kPageShift);
    REQUIRE(pte.target == PteTarget::Vram);
    unsigned char block[64];
    exporter.vram.read_bytes((pte.frame << kPageShift) | (off & (kPageSize - 1)), block, 64);
    std::uint64_t first;
    std::memcpy(&first, block, 8);
    if (first == 0) continue;
    ++written_blocks;
    // A store from GPU 0 (its ID in bits 63:48), the same 8 bytes repeated.
    CHECK((first >> 48) == 0);
    CHECK((first & 0xFFFF'FFFF'FFFFull) < 200);
    for (int k = 1; k < 8; ++k)
      CHECK(std::memcmp(block, block + 8 * k, 8) == 0);
  }
  CHECK(written_blocks > 150);  // 200 random stores over 16384 blocks rarely collide
  CHECK(written_blocks <= 200);
}

TEST_CASE("the default pod: every GPU loads from and stores to every other", "[sc][pod]") {
  Pod pod("pod", config_with({"workload.traffic.accesses=400", "workload.teardown=false"}));
  pod.run();
  REQUIRE(pod.ok());
  CHECK(pod.remote_accesses() == 8 * 400);
  CHECK(pod.faults() == 0);
  for (std::size_t g = 0; g < pod.gpu_count(); ++g) {
    GpuNode& n = pod.gpu(g);
    CHECK(n.agent.completed() == 400);
    CHECK(n.npa_mmu.mapped_pages() == 256);
    CHECK(n.driver.driver().imports() == 7);
    CHECK(n.driver.driver().exports() == 1);
    for (AccelId peer = 0; peer < 8; ++peer)
      if (peer != g) CHECK(n.driver.driver().connection(peer) == driver::ConnState::Established);
  }
}
