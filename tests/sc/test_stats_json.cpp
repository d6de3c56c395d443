// stats.json: what a user reads after a run, checked for completeness and consistency.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "sim/core/config_io.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;

namespace {
const podsim::test::PodsimRun& default_run() {
  static const auto r = run_podsim({"run", "--set", "workload.traffic.accesses=500"});
  return r;
}
double sum_over_gpus(const podsim::test::PodsimRun& r, const std::string& suffix,
                     const std::string& field = "value") {
  double s = 0;
  for (int g = 0; g < 8; ++g)
    s += r.stat(fmt::format("pod.gpu{}.{}", g, suffix), field);
  return s;
}
}  // namespace

TEST_CASE("every stat has a unit and a description", "[stats]") {
  const auto& r = default_run();
  REQUIRE(r.exit_code == 0);
  const auto& stats = r.stats->at("stats").as_object();
  CHECK(stats.size() > 200);
  for (const auto& kv : stats) {
    INFO(kv.key());
    CHECK(kv.value().at("unit").as_string().size() > 0);
    CHECK(kv.value().at("desc").as_string().size() > 0);
  }
  CHECK(r.stats->at("seed").to_number<int>() == 1);
  CHECK(r.stats->at("podsim_version").is_string());
  // stats.json is streamed, not built as a document that would merge a path given twice: in
  // the default pod's file, each stat's path and each field of a stat appear once (a group
  // refuses a second stat of a name: tests/unit/test_stats.cpp).
  const auto dup =
      podsim::config::find_duplicate_key(podsim::test::slurp(r.out_dir + "/stats.json"));
  CHECK_FALSE(dup);
  if (dup) FAIL_CHECK("stats.json repeats " << dup->key);
}

TEST_CASE("every module of every GPU reports its stats", "[stats]") {
  const auto& r = default_run();
  for (int g = 0; g < 8; ++g) {
    for (const char* s : {"agent.remote_latency", "gpuvm.walks", "vram.reads",
                          "npa_mmu.translations", "mailbox.commands_sent", "port0.tx.packets",
                          "driver.imports_first", "driver.sent.NPA_REQ"}) {
      INFO(g << " " << s);
      CHECK_NOTHROW(
          r.stat(fmt::format("pod.gpu{}.{}", g, s),
                 std::string(s).find("latency") != std::string::npos ? "count" : "value"));
    }
  }
  CHECK(r.stat("pod.fabric.plane0.switch0.packets") > 0);
  CHECK(r.stat("pod.fabric.plane0.link0.packets_a_to_b") > 0);
  CHECK(r.stat("pod.fabric.plane0.switch0.port7.packets") > 0);
}

TEST_CASE("the stats agree with each other", "[stats]") {
  const auto& r = default_run();
  const double accesses = r.stat("pod.summary.remote_accesses");
  CHECK(accesses == 8 * 500);
  CHECK(r.stat("pod.summary.remote_reads") + r.stat("pod.summary.remote_writes") == accesses);
  CHECK(sum_over_gpus(r, "agent.remote_reads") + sum_over_gpus(r, "agent.remote_writes") ==
        accesses);
  CHECK(r.stat("pod.summary.remote_latency", "count") == accesses);

  // The per-hop means add up to the mean latency.
  const auto& parts = r.stats->at("stats").at("pod.summary.remote_breakdown").at("mean_parts");
  double sum = 0;
  for (const auto& kv : parts.as_object())
    sum += kv.value().to_number<double>();
  CHECK(sum == Approx(r.stat("pod.summary.remote_latency", "mean")).epsilon(1e-9));

  // Every packet a port sent went through the switch; every command sent was received.
  CHECK(r.stat("pod.fabric.plane0.switch0.packets") == sum_over_gpus(r, "port0.tx.packets"));
  CHECK(sum_over_gpus(r, "port0.rx_packets") == sum_over_gpus(r, "port0.tx.packets"));
  CHECK(sum_over_gpus(r, "mailbox.commands_sent") == sum_over_gpus(r, "mailbox.commands_received"));
  // 8 GPUs each asked 7 exporters once.
  CHECK(sum_over_gpus(r, "driver.sent.NPA_REQ") == 56);
  CHECK(sum_over_gpus(r, "driver.received.NPA_RSP") == 56);
  CHECK(r.stat("pod.summary.import_time", "count") == 56);
  // Remote accesses reached remote memory: every exporter's VRAM served what the agents sent,
  // and the control path's writes (each landed in VRAM through the NPA MMU).
  const double control = sum_over_gpus(r, "mailbox.writes_landed");
  CHECK(control >= 3 * sum_over_gpus(r, "mailbox.commands_received"));  // slot, pointer, w-b
  CHECK(sum_over_gpus(r, "vram.reads") + sum_over_gpus(r, "vram.writes") == accesses + control);
  CHECK(sum_over_gpus(r, "npa_mmu.translations") == accesses + control);

  const double bw = r.stat("pod.summary.achieved_bandwidth");
  const double expect =
      r.stat("pod.summary.remote_bytes") / (r.stat("pod.summary.access_phase_time") * 1e-9) / 1e9;
  CHECK(bw == Approx(expect));
}
