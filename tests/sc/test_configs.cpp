// Every shipped config runs (briefly) and holds its invariants.
#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::source_path;

TEST_CASE("the Helios-like 72-GPU rack runs", "[configs]") {
  auto r = run_podsim({"run", source_path("configs/helios-72.json"), "--set", "workload.peers=4",
                       "--set", "workload.traffic.accesses=200"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.remote_accesses") == 72 * 200);
  CHECK(r.stat("pod.summary.invariant_violations") == 0);
  // Accesses spread over the 18 planes.
  for (int p = 0; p < 18; ++p)
    CHECK(r.stat("pod.summary.plane" + std::to_string(p) + ".wire_bytes") > 0);
  CHECK(r.stat("pod.summary.plane_balance") > 0.5);
  CHECK(r.config->at("fabric").at("planes").to_number<int>() == 18);
}

TEST_CASE("the 1,024-accelerator two-tier pod runs", "[configs]") {
  auto r = run_podsim({"run", source_path("configs/pod-1024.json"), "--set", "workload.peers=2",
                       "--set", "workload.traffic.accesses=20"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.remote_accesses") == 1024 * 20);
  CHECK(r.stat("pod.summary.invariant_violations") == 0);
  // Traffic went leaf -> spine -> leaf.
  CHECK(r.stat("pod.fabric.plane0.spine0.packets") > 0);
  CHECK(r.stat("pod.fabric.plane0.leaf31.packets") > 0);
}

TEST_CASE("every shipped config is valid", "[configs]") {
  for (const auto& entry : std::filesystem::directory_iterator(source_path("configs"))) {
    if (entry.path().extension() != ".json") continue;
    INFO(entry.path());
    auto r = run_podsim({"config", entry.path().string()}, false);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("node-reset runs clean with every after_reset mitigation", "[configs]") {
  // Announce makes the re-import quicker than lazy: the second access phases must still wait
  // for the first ones (they did not: "the GPU's compute agent is already running an access
  // phase", exit 1).
  for (const char* mode : {"lazy", "quarantine", "announce"}) {
    INFO(mode);
    auto r = run_podsim({"run", source_path("configs/node-reset.json"), "--quiet", "--set",
                         std::string("gpu.driver.after_reset=") + mode});
    INFO(r.err);
    CHECK(r.exit_code == 0);
    CHECK(r.stat("pod.summary.invariant_violations") == 0);
  }
}
