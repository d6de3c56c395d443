// Zero load: one remote 64 B read takes exactly the sum of the configured latencies on its
// path, computed here from the resolved config, independently of the model; changing one
// component's latency moves the result by exactly that much (twice where it is crossed
// twice); and the same holds on every topology.
#include <catch2/catch.hpp>
#include <cstdint>

#include "tests/support/run_podsim.hpp"
#include "tests/validation/analysis.hpp"

using namespace podsim;
using podsim::test::run_podsim;

namespace {

const std::vector<std::string> kOneRead = {
    "--set", "workload.initiators=[0]",          "--set", "workload.traffic.accesses=1",
    "--set", "workload.traffic.read_fraction=1", "--set", "workload.traffic.access_size=64B",
    "--set", "workload.teardown=false"};

struct ZeroLoad {
  std::int64_t model_ps;     // what podsim measured
  std::int64_t analytic_ps;  // what the config says it must be
};

// Runs one read from GPU 0 to `target` (`switches` on its path) with the extra settings.
ZeroLoad zero_load(const std::vector<std::string>& extra = {}, std::uint32_t target = 1,
                   std::uint32_t switches = 1) {
  std::vector<std::string> args = {"run", "--set", "pod.gpus=2"};
  args.insert(args.end(), kOneRead.begin(), kOneRead.end());
  args.insert(args.end(), extra.begin(), extra.end());
  args.insert(args.end(), {"--set", "workload.targets=[" + std::to_string(target) + "]"});
  auto r = run_podsim(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.stat("pod.summary.remote_accesses") == 1);
  // min == max == the one sample, exact to the ps.
  const double ns = r.stat("pod.summary.remote_latency", "min");
  REQUIRE(r.stat("pod.summary.remote_latency", "max") == ns);
  return {static_cast<std::int64_t>(ns * 1000.0 + 0.5),
          analysis::zero_load_read_ps(*r.config, 64, switches)};
}

}  // namespace

TEST_CASE("zero load: one remote 64 B read costs the sum of its path's latencies",
          "[validation][zero-load]") {
  ZeroLoad z = zero_load();
  CHECK(z.model_ps == z.analytic_ps);
  CHECK(z.analytic_ps > 500'000);  // a sanity bound: hundreds of ns
  // The control path warmed the exporter's NPA page-walk cache (the analysis says by how much:
  // one level of three); with the what-if control class, or without a page-walk cache, the
  // walk reads every level, one walk_level_latency (50 ns) more.
  for (const char* set : {"gpu.mailbox.transport=control_class", "gpu.npa_mmu.pwc_entries=0"}) {
    INFO(set);
    const ZeroLoad cold = zero_load({"--set", set});
    CHECK(cold.model_ps == cold.analytic_ps);
    CHECK(cold.model_ps - z.model_ps == 50'000);
  }
}

TEST_CASE("zero load: each component's latency moves the result by exactly its change",
          "[validation][zero-load]") {
  const ZeroLoad base = zero_load();
  REQUIRE(base.model_ps == base.analytic_ps);
  struct Change {
    std::string set;
    std::int64_t expected_delta_ps;  // how often the path crosses it, times the change
  };
  for (const Change& c : {
           Change{"fabric.switch.latency=250ns", 2 * 100'000},       // crossed twice
           Change{"gpu.vram.access_latency=170ns", 50'000},          // once
           Change{"fabric.port.fec_latency=30ns", 2 * 10'000},       // two receivers
           Change{"fabric.port.serdes_latency=9ns", 4 * 1'000},      // 2 tx + 2 rx sides
           Change{"gpu.gpuvm.walk_level_latency=60ns", 4 * 10'000},  // 4 levels, once
           Change{"gpu.npa_mmu.l2.latency=15ns", 5'000},             // once
           Change{"fabric.link.cable_length=3m", 4 * 5'000},         // 4 cable crossings
           Change{"gpu.compute.issue_latency=7ns", 2'000},
       }) {
    INFO(c.set);
    const ZeroLoad z = zero_load({"--set", c.set});
    CHECK(z.model_ps == z.analytic_ps);
    CHECK(z.model_ps - base.model_ps == c.expected_delta_ps);
  }
}

TEST_CASE("zero load on every topology equals the analytic per-hop sum",
          "[validation][zero-load][topology]") {
  SECTION("switch planes: an access takes one plane, one switch") {
    const ZeroLoad z = zero_load({"--set", "fabric.planes=4"});
    CHECK(z.model_ps == z.analytic_ps);
  }
  const std::vector<std::string> two_tier = {"--set", "pod.gpus=4",
                                             "--set", "fabric.topology=leaf_spine",
                                             "--set", "fabric.leaf_spine.gpus_per_leaf=2",
                                             "--set", "fabric.leaf_spine.spines=2"};
  SECTION("leaf/spine, both GPUs on one leaf: one switch") {
    const ZeroLoad z = zero_load(two_tier, 1, 1);
    CHECK(z.model_ps == z.analytic_ps);
  }
  SECTION("leaf/spine, GPUs on different leaves: leaf, spine, leaf") {
    const ZeroLoad z = zero_load(two_tier, 2, 3);
    CHECK(z.model_ps == z.analytic_ps);
  }
  SECTION("leaf/spine with planes") {
    auto args = two_tier;
    args.insert(args.end(), {"--set", "fabric.planes=2"});
    const ZeroLoad z = zero_load(args, 3, 3);
    CHECK(z.model_ps == z.analytic_ps);
  }
}
