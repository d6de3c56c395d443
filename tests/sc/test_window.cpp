// The measured window (workload.traffic.warmup) and the run's warnings
// (sim/pod/warnings.hpp): what a run measures, and what it says when it does not measure what
// it seems to.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "tests/support/run_podsim.hpp"

using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::source_path;
using podsim::test::write_temp_file;

namespace {
std::vector<std::string> warning_codes(const PodsimRun& r) {
  std::vector<std::string> out;
  for (const auto& w : r.run->at("warnings").as_array())
    out.emplace_back(w.at("code").as_string());
  return out;
}
std::string warning_text(const PodsimRun& r, const std::string& code) {
  for (const auto& w : r.run->at("warnings").as_array())
    if (w.at("code").as_string() == code) return std::string(w.at("message").as_string());
  return {};
}
bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
}  // namespace

TEST_CASE("a warm-up leaves the start of the access phase out of the measured window", "[window]") {
  // 8 GPUs, Poisson at half load for 10 us; the first 3 us of each GPU's phase are warm-up.
  auto r = run_podsim({"run", "--quiet", "--set", "workload.setup=direct", "--set",
                       "workload.traffic.injection=poisson", "--set",
                       "workload.traffic.duration=10us", "--set", "workload.traffic.warmup=3us"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const double measured = r.stat("pod.summary.measured.remote_accesses");
  const double warmup = r.stat("pod.summary.measured.warmup_accesses");
  const double all = r.stat("pod.summary.remote_accesses");
  // About 3 of the 10 us are warm-up (Poisson: the counts vary around it).
  CHECK(warmup / (measured + warmup) == Approx(0.3).margin(0.03));
  CHECK(measured < all);
  CHECK(r.stat("pod.summary.measured.remote_latency", "count") == measured);
  // The window: from the first measured access's completion (no earlier than 3 us into the
  // phase plus one access's latency) to the last, and the bandwidth is its bytes over it.
  const auto& run = *r.run;
  const double phase_start = run.at("phases").at("setup_ns").to_number<double>();
  const double start = r.stat("pod.summary.measured.window_start");
  const double length = r.stat("pod.summary.measured.window_time");
  CHECK(start >= phase_start + 3000 + r.stat("pod.summary.measured.remote_latency", "min"));
  CHECK(length > 6000);
  CHECK(length < 7000 + r.stat("pod.summary.measured.remote_latency", "max"));
  CHECK(run.at("measured_window").at("length_ns").to_number<double>() == Approx(length));
  CHECK(run.at("measured_window").at("warmup_ns").to_number<double>() == 3000);
  // Port utilisation over the window: near the offered half load (responses and stores),
  // where over the whole run (setup and teardown included) it is a few percent.
  const double util = r.stat("pod.gpu0.port0.tx.measured_utilisation");
  CHECK(util > 0.45);
  CHECK(util < 0.65);
  CHECK(r.stat("pod.gpu0.port0.tx.utilisation") < 0.2);
  // The phases add up to the run.
  const double sim = run.at("simulated_time_ns").to_number<double>();
  CHECK(phase_start + run.at("phases").at("access_ns").to_number<double>() +
            run.at("phases").at("teardown_ns").to_number<double>() ==
        Approx(sim));
}

TEST_CASE("without a warm-up every access is measured: the window's latency is the run's",
          "[window]") {
  auto r = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=500"});
  REQUIRE(r.exit_code == 0);
  for (const char* f : {"count", "mean", "p50", "p99", "max"})
    CHECK(r.stat("pod.summary.measured.remote_latency", f) ==
          r.stat("pod.summary.remote_latency", f));
  CHECK(r.stat("pod.summary.measured.warmup_accesses") == 0);
}

TEST_CASE("a warm-up that leaves nothing to measure is a config error", "[window][config]") {
  auto a = run_podsim(
      {"run", "--set", "workload.traffic.duration=5us", "--set", "workload.traffic.warmup=5us"});
  CHECK(a.exit_code == 2);
  CHECK_THAT(a.err, Catch::Contains("workload.traffic.warmup") &&
                        Catch::Contains("shorter than duration"));
  auto b = run_podsim({"run", "--set", "workload.traffic.accesses=100", "--set",
                       "workload.traffic.warmup_accesses=100"});
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.err, Catch::Contains("workload.traffic.warmup_accesses") &&
                        Catch::Contains("below accesses"));
  CHECK_FALSE(b.out_dir_exists);
}

TEST_CASE("a well-measured run has no warnings, and --warnings-as-errors passes it", "[window]") {
  auto r = run_podsim({"run", "--quiet", "--warnings-as-errors"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(warning_codes(r).empty());
}

TEST_CASE("a run too short to measure says so, and --warnings-as-errors fails it with exit 3",
          "[window]") {
  auto r = run_podsim({"run", "--set", "workload.traffic.accesses=20", "--warnings-as-errors"});
  CHECK(r.exit_code == 3);
  const auto codes = warning_codes(r);
  CHECK(has(codes, "window_too_short"));
  CHECK(has(codes, "too_few_accesses"));
  CHECK_THAT(r.err, Catch::Contains("warnings are errors") &&
                        Catch::Contains("window_too_short, too_few_accesses"));
  // The outputs are the run's, written in full; the summary lists the warnings in words.
  CHECK(r.stat("pod.summary.remote_accesses") == 160);
  CHECK_THAT(r.out, Catch::Contains("warnings          2") &&
                        Catch::Contains("only 160 remote accesses were measured"));
  CHECK_THAT(
      warning_text(r, "window_too_short"),
      Catch::Contains("times the mean latency") && Catch::Contains("workload.traffic.accesses="));
  // Without the flag, the same run succeeds (the warnings are still written).
  auto plain = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=20"});
  CHECK(plain.exit_code == 0);
  CHECK(warning_codes(plain) == codes);
}

TEST_CASE("an overloaded fabric: offered load not reached, latency still rising", "[window]") {
  // study-load's strict-priority arbitration at 80%: the switch outputs starve requests.
  auto r = run_podsim({"run", "--quiet", source_path("configs/study-load.json"), "--set",
                       "workload.traffic.offered_load=0.8", "--set",
                       "fabric.port.arbitration=strict_priority"});
  REQUIRE(r.exit_code == 0);
  const auto codes = warning_codes(r);
  CHECK(has(codes, "offered_load_not_reached"));
  CHECK(has(codes, "latency_trending"));
  CHECK_THAT(warning_text(r, "offered_load_not_reached"),
             Catch::Contains("0.80") && Catch::Contains("still rising"));
  CHECK_THAT(warning_text(r, "latency_trending"), Catch::Contains("still rising"));
  // Round robin at the same load carries it: no such warning.
  auto rr = run_podsim({"run", "--quiet", source_path("configs/study-load.json"), "--set",
                        "workload.traffic.offered_load=0.8"});
  REQUIRE(rr.exit_code == 0);
  CHECK_FALSE(has(warning_codes(rr), "offered_load_not_reached"));
}

TEST_CASE("one hop taking most of the latency is named with the keys that govern it", "[window]") {
  // Slow page walks with few TLB entries, set in the config file; the run's own --set is a
  // switch latency, which does not govern translation.
  const std::string cfg = write_temp_file(
      "slow-walks.json",
      R"({"gpu": {"gpuvm": {"walk_level_latency": "2us", "l1": {"entries": 0}, "l2": {"entries": 0}}}})");
  auto r = run_podsim({"run", "--quiet", cfg, "--set", "fabric.switch.latency=100ns", "--set",
                       "workload.traffic.accesses=500"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string w = warning_text(r, "dominant_hop");
  CHECK_THAT(w, Catch::StartsWith("req.gpuvm takes") && Catch::Contains("gpu.gpuvm") &&
                    Catch::Contains("gpu.driver.max_fragment") &&
                    Catch::Contains("none of the settings given (fabric.switch.latency, "
                                    "workload.traffic.accesses) do"));
  // Setting a key that governs it drops that last clause.
  auto r2 = run_podsim({"run", "--quiet", cfg, "--set", "gpu.gpuvm.walkers=2", "--set",
                        "workload.traffic.accesses=500"});
  REQUIRE(r2.exit_code == 0);
  CHECK_THAT(warning_text(r2, "dominant_hop"),
             Catch::StartsWith("req.gpuvm takes") && !Catch::Contains("none of the settings"));
}

TEST_CASE("accesses not served and retried are explained in words", "[window]") {
  auto r = run_podsim({"run", "--quiet", source_path("configs/revoke-under-load.json")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::string ns = warning_text(r, "not_served");
  CHECK_THAT(ns, Catch::Contains("were not served, beside") &&
                     Catch::Contains("refused by the exporter") &&
                     Catch::Contains("not in the latency or bandwidth figures"));
  CHECK_THAT(warning_text(r, "retried"), Catch::Contains("answered \"retry\""));
}
