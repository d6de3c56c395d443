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
  // The window: from the first measured access issued (no earlier than 3 us into the phase) to
  // the last completed, and the bandwidth is its bytes over it.
  const auto& run = *r.run;
  const double phase_start = run.at("phases").at("setup_ns").to_number<double>();
  const double start = r.stat("pod.summary.measured.window_start");
  const double length = r.stat("pod.summary.measured.window_time");
  CHECK(start >= phase_start + 3000);
  CHECK(start < phase_start + 3100);  // Poisson at half load: some GPU issues within 0.1 us
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
  // The tables: breakdown.csv is the window's, the whole run's beside it; latency.csv adds the
  // window's remote row.
  const std::string bd = podsim::test::slurp(r.out_dir + "/breakdown.csv");
  CHECK(bd.rfind("hop,mean_ns,whole_run_mean_ns\n", 0) == 0);
  const std::string lat = podsim::test::slurp(r.out_dir + "/latency.csv");
  CHECK_THAT(lat, Catch::Contains("\nremote_measured,"));
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
  // The tables are as they always were: no window columns or rows.
  CHECK(podsim::test::slurp(r.out_dir + "/breakdown.csv").rfind("hop,mean_ns\n", 0) == 0);
  CHECK_THAT(podsim::test::slurp(r.out_dir + "/latency.csv"), !Catch::Contains("remote_measured"));
}

TEST_CASE("a warm-up that leaves nothing to measure is a config error", "[window][config]") {
  auto a = run_podsim(
      {"run", "--set", "workload.traffic.duration=5us", "--set", "workload.traffic.warmup=5us"});
  CHECK(a.exit_code == 2);
  CHECK_THAT(a.err, Catch::Contains("workload.traffic.warmup") &&
                        Catch::Contains("shorter than traffic.duration"));
  auto b = run_podsim({"run", "--set", "workload.traffic.accesses=100", "--set",
                       "workload.traffic.warmup_accesses=100"});
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.err, Catch::Contains("workload.traffic.warmup_accesses") &&
                        Catch::Contains("below traffic.accesses"));
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

TEST_CASE("a warm-up past a known cold start measures only warm accesses", "[window]") {
  // GPU 0 reads GPU 1's buffer one load at a time (pointer chase) within one 2 MiB fragment:
  // only the first load misses the TLBs at both ends (the cold start); every later one takes
  // the same warm path.
  const std::vector<std::string> base = {"run",   "--quiet",
                                         "--set", "pod.gpus=2",
                                         "--set", "workload.initiators=[0]",
                                         "--set", "workload.traffic.pattern=pointer_chase",
                                         "--set", "workload.traffic.read_fraction=1.0",
                                         "--set", "workload.traffic.accesses=200"};
  auto cold = run_podsim(base);
  auto with = base;
  with.insert(with.end(), {"--set", "workload.traffic.warmup_accesses=1"});
  auto warm = run_podsim(with);
  REQUIRE(cold.exit_code == 0);
  REQUIRE(warm.exit_code == 0);
  const char* lat = "pod.summary.measured.remote_latency";
  // Without a warm-up the first load's walks are in the window: its max is above its min.
  CHECK(cold.stat(lat, "max") > cold.stat(lat, "min") + 50);
  // With one warm-up access, every measured load is the warm one: min = max, 199 of them.
  CHECK(warm.stat(lat, "count") == 199);
  CHECK(warm.stat(lat, "min") == warm.stat(lat, "max"));
  CHECK(warm.stat(lat, "min") == cold.stat(lat, "min"));
  CHECK(warm.stat("pod.summary.measured.warmup_accesses") == 1);
  // The simulation itself is the same: the whole run's figures are unchanged.
  for (const char* f : {"count", "mean", "min", "max"})
    CHECK(warm.stat("pod.summary.remote_latency", f) == cold.stat("pod.summary.remote_latency", f));
}

TEST_CASE("a saturated port reads about 100% over the measured window", "[window]") {
  // GPU 0 streams 256 B stores to GPU 1 with enough in flight to keep its port sending.
  auto r = run_podsim({"run", "--quiet", "--set", "pod.gpus=2", "--set", "workload.initiators=[0]",
                       "--set", "workload.traffic.read_fraction=0", "--set",
                       "workload.traffic.access_size=256B", "--set",
                       "workload.traffic.outstanding=1024", "--set",
                       "workload.traffic.accesses=20000", "--set", "workload.traffic.warmup=2us"});
  REQUIRE(r.exit_code == 0);
  const double busy = r.stat("pod.gpu0.port0.tx.measured_utilisation");
  CHECK(busy > 0.97);
  CHECK(busy <= 1.0);
  // The switch output towards GPU 1 carries the same stream.
  CHECK(r.stat("pod.fabric.plane0.switch0.port1.measured_utilisation") > 0.97);
  // And the whole run's, setup and teardown included, is far below.
  CHECK(r.stat("pod.gpu0.port0.tx.utilisation") < 0.5);
}

TEST_CASE("the window's rates are never above the truth, however short the window", "[window]") {
  // 16 stores of 256 B per GPU, 64 in flight: a window of a few tens of ns. Before, the
  // window began at the first completion and a port read 210% busy.
  auto r =
      run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=16", "--set",
                  "workload.traffic.outstanding=64", "--set", "workload.traffic.access_size=256B",
                  "--set", "workload.traffic.read_fraction=0"});
  REQUIRE(r.exit_code == 0);
  for (int g = 0; g < 8; ++g) {
    CHECK(r.stat(fmt::format("pod.gpu{}.port0.tx.measured_utilisation", g)) <= 1.0);
    CHECK(r.stat(fmt::format("pod.fabric.plane0.switch0.port{}.measured_utilisation", g)) <= 1.0);
  }
  // 8 ports of 100 GB/s carry at most 800 GB/s of wire bytes.
  CHECK(r.stat("pod.summary.measured.achieved_bandwidth") < 800);
  // A closed loop cannot carry more than its accesses in flight over their latency (Little).
  auto c = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=500"});
  REQUIRE(c.exit_code == 0);
  const double little = 8 * 16 * 64 /* B */ / c.stat("pod.summary.measured.remote_latency", "mean");
  CHECK(c.stat("pod.summary.measured.achieved_bandwidth") <= little);
}

TEST_CASE("warnings that do not apply stay quiet, and their suggestions can be pasted",
          "[window]") {
  // Local accesses never use the port: half of them local is not a load the port missed.
  auto local =
      run_podsim({"run", "--quiet", source_path("configs/study-load.json"), "--set",
                  "workload.traffic.warmup=2us", "--set", "workload.traffic.local_fraction=0.5"});
  REQUIRE(local.exit_code == 0);
  CHECK_FALSE(has(warning_codes(local), "offered_load_not_reached"));
  // All 8 GPUs loading from GPU 2: its port is the hop, and the run's own setting governs it.
  auto hot = run_podsim({"run", "--quiet", source_path("configs/study-load.json"), "--set",
                         "workload.traffic.warmup=2us", "--set", "workload.targets=[2]"});
  REQUIRE(hot.exit_code == 0);
  const std::string w = warning_text(hot, "dominant_hop");
  CHECK_THAT(w, Catch::StartsWith("resp.port_tx") && Catch::Contains("workload.targets") &&
                    !Catch::Contains("none of the settings") &&
                    !Catch::Contains("outstanding"));  // Poisson: outstanding does not apply
  // A suggestion is a value --set takes (no thousands separators), and applying it clears
  // the warning.
  auto s = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=100"});
  const std::string text = warning_text(s, "window_too_short");
  const auto at = text.find("workload.traffic.accesses=");
  REQUIRE(at != std::string::npos);
  const std::string set = text.substr(at);
  CHECK(set.find(',') == std::string::npos);
  auto again = run_podsim({"run", "--quiet", "--set", set});
  INFO(set << "\n" << again.err);
  REQUIRE(again.exit_code == 0);
  CHECK_FALSE(has(warning_codes(again), "window_too_short"));
  // A scenario's steps are named, not a key the steps do not read.
  auto sc = run_podsim({"run", "--quiet", source_path("configs/study-isolation.json")});
  CHECK_THAT(warning_text(sc, "window_too_short"), Catch::Contains("the access steps'"));
}

TEST_CASE("posted stores in a closed loop are said not to time the fabric", "[window]") {
  auto r = run_podsim({"run", "--quiet", "--set", "workload.traffic.posted_writes=true", "--set",
                       "workload.traffic.read_fraction=0"});
  REQUIRE(r.exit_code == 0);
  CHECK(has(warning_codes(r), "posted_closed_loop"));
  CHECK(r.stat("pod.summary.measured.remote_accesses") == 16000);
  auto p =
      run_podsim({"run", "--quiet", "--set", "workload.traffic.posted_writes=true", "--set",
                  "workload.traffic.read_fraction=0", "--set", "workload.traffic.injection=poisson",
                  "--set", "workload.traffic.duration=20us"});
  REQUIRE(p.exit_code == 0);
  CHECK_FALSE(has(warning_codes(p), "posted_closed_loop"));
}

TEST_CASE(
    "posted stores that outrun their target are lost to the teardown: counted, said, and not in "
    "the bandwidth",
    "[window]") {
  // Seven GPUs post 256 B stores into GPU 0 at their full port rate: GPU 0's one port takes a
  // seventh of it, so most are still queued when the last is issued (done, for its GPU), and
  // the teardown revokes GPU 0's export under them.
  const std::vector<std::string> base{"run",   "--quiet",
                                      "--set", "workload.traffic.posted_writes=true",
                                      "--set", "workload.traffic.read_fraction=0",
                                      "--set", "workload.traffic.access_size=256B",
                                      "--set", "workload.traffic.injection=poisson",
                                      "--set", "workload.targets=[0]",
                                      "--set", "workload.traffic.accesses=3000"};
  auto over = base;
  over.insert(over.end(), {"--set", "workload.traffic.offered_load=1"});
  auto r = run_podsim(over);
  REQUIRE(r.exit_code == 0);
  double issued = 0;
  for (int g = 1; g < 8; ++g)
    issued += r.stat(fmt::format("pod.gpu{}.agent.posted_writes", g));
  CHECK(issued == 21000);
  const double lost = r.stat("pod.summary.posted_lost");
  CHECK(lost > 1000);
  CHECK(r.stat("pod.gpu0.npa_mmu.posted_lost") == lost);
  // Every store either landed in GPU 0's VRAM (beside the driver's own writes there) or was lost.
  const double landed = r.stat("pod.gpu0.vram.writes") - r.stat("pod.gpu0.mailbox.writes_landed");
  CHECK(landed + lost == issued);
  CHECK(has(warning_codes(r), "posted_lost"));
  std::string count = std::to_string(static_cast<long>(lost));  // as the warning writes it
  for (auto at = count.size(); at > 3; at -= 3)
    count.insert(at - 3, ",");
  CHECK_THAT(warning_text(r, "posted_lost"), Catch::StartsWith(count + " posted stores were lost"));
  CHECK(has(warning_codes(r), "offered_load_not_reached"));
  // What was delivered, over the phase to the last landing: below what GPU 0's port carries
  // (100 GB/s on the wire, 87.2% of it payload at 256 B); issued, it would be 7 times that.
  const double delivered = landed * 256;
  const double bw = r.stat("pod.summary.achieved_bandwidth");
  CHECK(bw <= 87.2);
  CHECK(bw == Approx(delivered / r.stat("pod.summary.access_phase_time")).epsilon(1e-9));
  CHECK(r.stat("pod.summary.measured.achieved_bandwidth") == Approx(bw).epsilon(1e-9));
  // Posted stores that fault in their own GPUVM (their import revoked under them) are lost
  // too, and left out of the bandwidth as those refused at their target are.
  auto revoked = run_podsim({"run", source_path("configs/revoke-under-load.json"), "--quiet",
                             "--set", "workload.traffic.posted_writes=true"});
  REQUIRE(revoked.exit_code == 0);
  double gpuvm_lost = 0, npa_lost = 0;
  for (int g = 0; g < 4; ++g) {  // the config's 4 GPUs
    const std::string gpu = fmt::format("pod.gpu{}.", g);
    gpuvm_lost += revoked.stat(gpu + "gpuvm.faults") - revoked.stat(gpu + "agent.faults");
    npa_lost += revoked.stat(gpu + "npa_mmu.posted_lost");
  }
  CHECK(gpuvm_lost > 0);
  CHECK(revoked.stat("pod.summary.posted_lost") == gpuvm_lost + npa_lost);
  const double size = 64;  // the config's access size (the default)
  CHECK(revoked.stat("pod.summary.achieved_bandwidth") ==
        Approx((revoked.stat("pod.summary.remote_bytes") - size * (gpuvm_lost + npa_lost)) /
               revoked.stat("pod.summary.access_phase_time"))
            .epsilon(1e-9));
  // Posted stores into the GPU's own VRAM are no remote bytes.
  auto local =
      run_podsim({"run", "--quiet", "--set", "workload.traffic.posted_writes=true", "--set",
                  "workload.traffic.local_fraction=1", "--set", "workload.traffic.read_fraction=0",
                  "--set", "workload.traffic.accesses=100"});
  REQUIRE(local.exit_code == 0);
  CHECK(local.stat("pod.summary.remote_bytes") == 0);
  CHECK(local.stat("pod.summary.achieved_bandwidth") == 0);
  // Paced below what GPU 0 takes, nothing is lost and nothing said.
  auto paced = base;
  paced.insert(paced.end(), {"--set", "workload.traffic.offered_load=0.1"});
  auto p = run_podsim(paced);
  REQUIRE(p.exit_code == 0);
  CHECK(p.stat("pod.summary.posted_lost") == 0);
  CHECK_FALSE(has(warning_codes(p), "posted_lost"));
}

TEST_CASE("a run without an access phase has it all as setup", "[window]") {
  auto r = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=0"});
  REQUIRE(r.exit_code == 0);
  const auto& ph = r.run->at("phases");
  CHECK(ph.at("setup_ns").to_number<double>() ==
        r.run->at("simulated_time_ns").to_number<double>());
  CHECK(ph.at("access_ns").to_number<double>() == 0);
}

TEST_CASE("a GPU that runs several access phases is said to stretch the window over the gaps",
          "[window]") {
  // node-reset: GPU 1's accesses stop with its reset and begin again after it.
  auto r = run_podsim({"run", "--quiet", source_path("configs/node-reset.json")});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(warning_text(r, "window_spans_phases"),
             Catch::Contains("access phases") && Catch::Contains("whatever lies between"));
  // One phase per GPU (the default all_to_all): no such warning.
  auto one = run_podsim({"run", "--quiet"});
  CHECK_FALSE(has(warning_codes(one), "window_spans_phases"));
}
