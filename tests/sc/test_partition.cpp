// One pod split across MPI ranks (`mpirun -n R podsim run`): every output the same as one
// rank's, byte for byte (host-time fields aside), whatever the number of ranks.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "sim/pod/partition.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::run_podsim_mpi;
using podsim::test::slurp;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// The files a run writes whose every byte depends on the simulation alone.
const char* const kExact[] = {"stats.json",    "config.json",           "latency.csv",
                              "breakdown.csv", "latency_histogram.csv", "timeseries.csv"};
// Written by some workloads only: compared whenever the one-rank run wrote them.
const char* const kIfWritten[] = {"collectives.csv", "collectives.json", "model.csv"};

// run.json without what depends on the host or on the number of ranks.
json::object simulated_part(const PodsimRun& r) {
  json::object run = r.run->as_object();
  for (const char* k : {"host_seconds", "host", "kernel", "partition", "overrides"})
    run.erase(k);
  return run;
}

// Runs `args` on one rank and under mpirun on each of `ranks`, and compares every output.
void same_at_every_rank_count(const std::vector<std::string>& args, std::vector<int> ranks) {
  const PodsimRun one = run_podsim(args);
  INFO(one.err);
  REQUIRE(one.run);
  for (int n : ranks) {
    const PodsimRun split = run_podsim_mpi(n, args);
    INFO(n << " ranks: " << split.err);
    REQUIRE(split.exit_code == one.exit_code);
    REQUIRE(split.run);
    for (const char* f : kExact) {
      INFO(f);
      const std::string want = slurp((fs::path(one.out_dir) / f).string());
      REQUIRE(!want.empty());
      CHECK(slurp((fs::path(split.out_dir) / f).string()) == want);
    }
    for (const char* f : kIfWritten) {
      INFO(f);
      const fs::path one_file = fs::path(one.out_dir) / f;
      if (!fs::exists(one_file)) continue;
      const std::string want = slurp(one_file.string());
      REQUIRE(want.find('\n') != want.rfind('\n'));  // a header and at least a row
      CHECK(slurp((fs::path(split.out_dir) / f).string()) == want);
    }
    CHECK(simulated_part(split) == simulated_part(one));
    // It really was split: every rank simulated windows and packets crossed between them.
    const json::object& part = split.run->at("partition").as_object();
    CHECK(part.at("ranks").to_number<int>() == n);
    CHECK(part.at("cut_links").to_number<int>() > 0);
    std::uint64_t packets = 0;
    for (const auto& r : part.at("per_rank").as_array()) {
      CHECK(r.at("windows").to_number<std::uint64_t>() > 0);
      CHECK(r.at("serves").to_number<std::uint64_t>() > 0);
      packets += r.at("packets_sent").to_number<std::uint64_t>();
      // Every window, and all its exchange's time, in one of the host phases.
      std::uint64_t windows = 0;
      double sync = 0;
      for (const char* phase : {"setup", "access", "teardown"}) {
        windows += r.at("phases").at(phase).at("windows").to_number<std::uint64_t>();
        sync += r.at("phases").at(phase).at("sync_seconds").to_number<double>();
      }
      CHECK(windows == r.at("windows").to_number<std::uint64_t>());
      CHECK(sync == Approx(r.at("sync_seconds").to_number<double>()).margin(1e-6));
    }
    CHECK(packets > 0);
  }
}

}  // namespace

TEST_CASE("the default pod split over 2 and 3 ranks gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count({"run", "--quiet", "--set", "workload.traffic.accesses=300"}, {2, 3});
}

TEST_CASE("the default pod with direct setup and Poisson load split over 2 and 4 ranks",
          "[partition]") {
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.setup=direct", "--set",
       "workload.traffic.injection=poisson", "--set", "workload.traffic.accesses=400"},
      {2, 4});
}

TEST_CASE(
    "a measured window after a warm-up split over 2 and 3 ranks gives the one-rank outputs: "
    "its utilisations come from every rank's ports",
    "[partition]") {
  // The window's utilisations are evaluated on rank 0 from the merged busy times over the
  // window every rank's GPUs measured; a rank's own value would be over its own window.
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.setup=direct", "--set",
       "workload.traffic.injection=poisson", "--set", "workload.traffic.duration=4us", "--set",
       "workload.traffic.warmup=1us"},
      {2, 3});
}

TEST_CASE(
    "direct setup with unpinned memory split over 2 and 4 ranks: GPUs simulated elsewhere "
    "stay still",
    "[partition]") {
  // With a direct setup every rank builds every GPU and fills every copy's export table: the
  // eviction worker of a copy another rank simulates must not move pages or send shootdowns.
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.setup=direct", "--set",
       "gpu.driver.exported_memory=unpinned", "--set", "workload.traffic.accesses=200"},
      {2, 4});
}

TEST_CASE("a host's GPUs stay on one rank: they are activated together", "[partition][host]") {
  podsim::PodConfig cfg;
  cfg.pod.gpus = 8;
  cfg.pod.gpus_per_host = 4;
  CHECK(podsim::plan_partition(cfg, 3).gpu == std::vector<std::uint32_t>{0, 0, 0, 0, 1, 1, 1, 1});
  cfg.pod.gpus_per_host = 3;  // hosts of GPUs 0-2, 3-5 and 6-7
  CHECK(podsim::plan_partition(cfg, 2).gpu == std::vector<std::uint32_t>{0, 0, 0, 0, 0, 0, 1, 1});
  cfg.pod.gpus_per_host = 1;
  CHECK(podsim::plan_partition(cfg, 3).gpu == std::vector<std::uint32_t>{0, 0, 0, 1, 1, 1, 2, 2});
}

TEST_CASE("a pod of 2 hosts of 4 GPUs split over 2 and 3 ranks gives the one-rank outputs",
          "[partition][host]") {
  // At 3 ranks one rank holds no GPU, only a switch plane.
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "pod.gpus_per_host=4", "--set", "workload.traffic.accesses=200"},
      {2, 3});
}

TEST_CASE("a rank builds only the GPUs it simulates but every GPU with a direct setup",
          "[partition][host]") {
  // A direct setup writes both ends of every import at once. Each rank reports in run.json
  // what it built (and its peak memory: only that it is there is checked).
  auto built = [](const std::vector<std::string>& args, int ranks) {
    const PodsimRun split = run_podsim_mpi(ranks, args);
    INFO(split.err);
    REQUIRE(split.exit_code == 0);
    REQUIRE(split.run);
    std::vector<std::uint64_t> gpus;
    for (const auto& r : split.run->at("partition").at("per_rank").as_array()) {
      gpus.push_back(r.at("gpus_built").to_number<std::uint64_t>());
      CHECK(r.at("peak_rss_bytes").to_number<std::uint64_t>() > 0);
    }
    return gpus;
  };
  // Hosts of GPUs 0-3 and 4-7: ranks 0 and 1 simulate one each, rank 2 only the switch.
  CHECK(built({"run", "--quiet", "--set", "pod.gpus_per_host=4", "--set",
               "workload.traffic.accesses=50"},
              3) == std::vector<std::uint64_t>{4, 4, 0});
  CHECK(built({"run", "--quiet", "--set", "workload.setup=direct", "--set",
               "workload.traffic.accesses=50"},
              2) == std::vector<std::uint64_t>{8, 8});
}

TEST_CASE("helios-72 split over 2 and 3 ranks gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count({"run", podsim::test::source_path("configs/helios-72.json"), "--quiet",
                            "--set", "workload.traffic.accesses=50"},
                           {2, 3});
}

TEST_CASE("node-reset split over 2 and 3 ranks gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count({"run", podsim::test::source_path("configs/node-reset.json"), "--quiet"},
                           {2, 3});
}

TEST_CASE("revoke-under-load split over 2 and 3 ranks gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count(
      {"run", podsim::test::source_path("configs/revoke-under-load.json"), "--quiet"}, {2, 3});
}

TEST_CASE("a leaf/spine pod split over 3 ranks gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "pod.gpus=24", "--set", "fabric.topology=leaf_spine", "--set",
       "fabric.leaf_spine.gpus_per_leaf=8", "--set", "fabric.leaf_spine.spines=4", "--set",
       "workload.peers=5", "--set", "workload.traffic.accesses=100"},
      {3});
}

TEST_CASE("atomics split over 2 and 3 ranks give the one-rank outputs", "[partition]") {
  // Fetch-and-add carries data both ways: its operand out, the old value back.
  same_at_every_rank_count({"run", "--quiet", "--set", "workload.traffic.atomic_fraction=0.3",
                            "--set", "workload.traffic.accesses=300"},
                           {2, 3});
}

TEST_CASE("what crosses between ranks stays within its budget of bytes per packet", "[partition]") {
  // Counted, never timed: everything two ranks send each other (packets with their records,
  // credit returns, notes) per packet that crossed, on the default pod (64-byte accesses, half
  // loads). A packet carries its head (80 bytes), its stamps and only the data it holds (none
  // on a load's request or a store's response: Access::data_bytes): 268 bytes per packet when
  // this budget was set, 486 when every packet took its whole 256-byte data array along.
  constexpr double kBudget = 335;
  const std::vector<std::string> args = {
      "run", "--quiet", "--set", "workload.setup=direct", "--set", "workload.traffic.accesses=300"};
  const PodsimRun split = run_podsim_mpi(2, args);
  INFO(split.err);
  REQUIRE(split.exit_code == 0);
  REQUIRE(split.run);
  std::uint64_t bytes = 0, packets = 0;
  for (const auto& r : split.run->at("partition").at("per_rank").as_array()) {
    bytes += r.at("bytes_sent").to_number<std::uint64_t>();
    packets += r.at("packets_sent").to_number<std::uint64_t>();
  }
  REQUIRE(packets > 1000);
  const double per_packet = static_cast<double>(bytes) / static_cast<double>(packets);
  INFO("bytes sent per packet that crossed: " << per_packet << ", budget " << kBudget);
  CHECK(per_packet <= kBudget);
}

TEST_CASE("an NPA MMU that checks grant tags split over 2 ranks gives the one-rank outputs",
          "[partition]") {
  // A request's grant crosses ranks with it: without it every remote access faulted.
  same_at_every_rank_count({"run", "--quiet", "--set", "gpu.npa_mmu.check_grant_tags=true", "--set",
                            "workload.traffic.accesses=100"},
                           {2});
}

TEST_CASE("collective-allreduce split over 2 and 3 ranks gives the one-rank outputs",
          "[partition][collective]") {
  // Every size's calls and the check of every participant's output, whichever rank ran it.
  same_at_every_rank_count({"run", podsim::test::source_path("configs/collective-allreduce.json"),
                            "--quiet", "--set", R"(workload.collective.sizes=["4KiB","256KiB"])"},
                           {2, 3});
}

TEST_CASE("collective-moe-dispatch split over 2 ranks gives the one-rank outputs",
          "[partition][collective]") {
  same_at_every_rank_count(
      {"run", podsim::test::source_path("configs/collective-moe-dispatch.json"), "--quiet"}, {2});
}

TEST_CASE("a two-shot all-reduce with direct setup split over 3 ranks gives the one-rank outputs",
          "[partition][collective]") {
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.kind=collective", "--set", "workload.setup=direct",
       "--set", "workload.collective.algorithm=two_shot", "--set",
       R"(workload.collective.sizes=["64KiB"])"},
      {3});
}

TEST_CASE("a collective and a model trace with nothing on rank 0 give the one-rank outputs",
          "[partition][collective][model]") {
  // At 2 ranks rank 0 simulates GPUs 0-3: it runs no process, yet writes when the workload
  // started (run.json) and every result, as one rank does.
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.kind=collective", "--set",
       "workload.collective.gpus=[4,5,6,7]", "--set", R"(workload.collective.sizes=["4KiB"])"},
      {2});
  const std::string trace = podsim::test::write_temp_file("t.json", R"({"nodes": [
    {"id": "a", "gpu": 4, "type": "compute", "duration": "2us"},
    {"id": "s", "gpu": 4, "type": "send", "peer": 6, "bytes": "8KiB", "deps": ["a"]},
    {"id": "r", "gpu": 6, "type": "recv", "peer": 4, "bytes": "8KiB"}]})");
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace}, {2});
}

TEST_CASE("model-helios-layer split over 2 and 3 ranks gives the one-rank outputs",
          "[partition][model]") {
  // The shipped config's fabric and setup with a smaller batch (8 tokens:
  // scripts/gen-helios-layer-trace.py --tokens 8), so that it runs in seconds.
  same_at_every_rank_count(
      {"run", podsim::test::source_path("configs/model-helios-layer.json"), "--quiet", "--set",
       "workload.model=" +
           podsim::test::source_path("tests/sc/configs/helios-layer-8-tokens.json")},
      {2, 3});
}

TEST_CASE("a model trace's sends, receives and broadcast across ranks give the one-rank outputs",
          "[partition][model]") {
  // GPU 0 (rank 0) sends to GPU 7 (the last rank) and broadcasts over [0, 3, 5, 7] with root
  // 5; GPU 7 waits for the receive before it computes, and everyone's compute differs.
  std::string nodes;
  for (int g : {0, 3, 5, 7})
    nodes += fmt::format(
        R"({{"id": "c{0}", "gpu": {0}, "type": "compute", "duration": "{1}us"}},
           {{"id": "b{0}", "gpu": {0}, "type": "collective", "op": "broadcast", "group": "g",
             "root": 5, "bytes": "128KiB", "deps": ["c{0}"]}},)",
        g, 1 + g);
  nodes += R"({"id": "s", "gpu": 0, "type": "send", "peer": 7, "bytes": "96KiB", "deps": ["c0"]},
              {"id": "r", "gpu": 7, "type": "recv", "peer": 0, "bytes": "96KiB"},
              {"id": "use", "gpu": 7, "type": "compute", "duration": "1us", "deps": ["r"]})";
  const std::string trace = podsim::test::write_temp_file(
      "t.json", R"({"groups": {"g": [0, 3, 5, 7]}, "nodes": [)" + nodes + "]}");
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace},
      {2, 3});
}

TEST_CASE("a split run with a bad config fails on every rank, said once, nothing written",
          "[partition]") {
  const PodsimRun r = run_podsim_mpi(2, {"run", "--set", "pod.gpus=nine"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("pod.gpus") != std::string::npos);
  const auto first = r.err.find("podsim: config error");
  REQUIRE(first != std::string::npos);
  CHECK(r.err.find("podsim: config error", first + 1) == std::string::npos);  // rank 0 alone
  CHECK(!r.run);
  CHECK(!r.out_dir_exists);
}

TEST_CASE("options a split run cannot honour are refused", "[partition]") {
  const PodsimRun r = run_podsim_mpi(2, {"run", "--trace", "x.json"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--trace is not available") != std::string::npos);
  CHECK(!r.run);
}

TEST_CASE("a run stopped by a failed step gives the one-rank outputs at 2 and 3 ranks",
          "[partition]") {
  // The exporter answers later than this driver waits: an import fails mid-run and the pod
  // stops the host latency later, on every rank at the same simulated time.
  same_at_every_rank_count({"run", podsim::test::source_path("configs/revoke-under-load.json"),
                            "--quiet", "--set", "gpu.driver.response_timeout=3us"},
                           {2, 3});
}

TEST_CASE("failures on different ranks are listed in the order they happened", "[partition]") {
  const std::string cfg = podsim::test::write_temp_file(
      "two-failures.json",
      R"({"pod": {"gpus": 4}, "workload": {"kind": "scenario", "steps": [
            {"gpu": 3, "op": "wait", "for": "1us", "expect": "EINVAL"},
            {"gpu": 0, "op": "wait", "for": "1500ns", "expect": "EINVAL"}]}})");
  const PodsimRun one = run_podsim({"run", cfg, "--quiet"});
  const PodsimRun split = run_podsim_mpi(2, {"run", cfg, "--quiet"});
  REQUIRE(one.run);
  REQUIRE(split.run);
  CHECK(one.exit_code == 1);
  CHECK(split.exit_code == 1);
  const json::array& failures = split.run->at("failures").as_array();
  REQUIRE(failures.size() == 2);
  CHECK(std::string(failures[0].as_string()).find("gpu3") != std::string::npos);  // at 1 us
  CHECK(std::string(failures[1].as_string()).find("gpu0") != std::string::npos);  // at 1.5 us
  CHECK(one.run->at("failures") == split.run->at("failures"));
}

TEST_CASE("a 1 ps lookahead still gives the one-rank outputs", "[partition]") {
  same_at_every_rank_count(
      {"run", "--quiet", "--set", "workload.traffic.accesses=30", "--set",
       "fabric.switch.latency=0ns", "--set", "fabric.link.cable_length=0m", "--set",
       "fabric.port.fec_latency=0ns", "--set", "fabric.port.pipeline_latency=0ns", "--set",
       "fabric.port.serdes_latency=1ps"},
      {2});
}

TEST_CASE("a cut link stalled while a packet's credits are on their way gives the one-rank outputs",
          "[partition][faults]") {
  same_at_every_rank_count(
      {"run", podsim::test::source_path("tests/sc/configs/link-stall-credits.json"), "--quiet"},
      {2, 3});
}

TEST_CASE("a GPU back from a reset at the very picosecond of other work gives the one-rank outputs",
          "[partition][reset]") {
  // Its return is an item of the event queue: the same order at any number of ranks (it was a
  // SystemC process, and 2 or 3 ranks could see the GPU up where one saw it down).
  for (const char* cfg : {"tests/sc/configs/reset-same-picosecond-send.json",
                          "tests/sc/configs/reset-same-picosecond-arrival.json"}) {
    INFO(cfg);
    same_at_every_rank_count({"run", podsim::test::source_path(cfg), "--quiet"}, {2, 3});
  }
}

TEST_CASE(
    "windows end at the earliest effect on another rank: a GPU's work reaches a switch only "
    "after its port and the switch's input",
    "[partition]") {
  // Latencies chosen so that each bound is a different path: a GPU's first effect beyond it is
  // a packet's arrival at a switch's input (transmit 10 ns, flight 10 ns, the switch's latency
  // less its output's 10 ns: 210 ns); a switch's a packet into a GPU port or a credit return
  // (10 + 10 + receive 30: 50 ns), which is also the pod-wide lookahead.
  const std::vector<std::string> args{"run",   "--quiet",
                                      "--set", "workload.traffic.accesses=300",
                                      "--set", "fabric.port.pipeline_latency=4ns",
                                      "--set", "fabric.port.serdes_latency=6ns",
                                      "--set", "fabric.port.fec_latency=20ns",
                                      "--set", "fabric.link.cable_length=2m",
                                      "--set", "fabric.switch.latency=200ns"};
  same_at_every_rank_count(args, {2, 3});
  const PodsimRun split = run_podsim_mpi(2, args);
  INFO(split.err);
  REQUIRE(split.run);
  const json::object& part = split.run->at("partition").as_object();
  CHECK(part.at("lookahead_ns").to_number<double>() == 50);
  CHECK(part.at("gpu_lookahead_ns").to_number<double>() == 210);
  CHECK(part.at("switch_lookahead_ns").to_number<double>() == 50);
  // Fewer windows than when every rank's next window ended its next due time plus the
  // pod-wide lookahead later (4,435; 3,095 since 2026-12-04): a guard against losing the bounds.
  for (const auto& r : part.at("per_rank").as_array())
    CHECK(r.at("windows").to_number<std::uint64_t>() <= 3300);
}

TEST_CASE("a split run says in which host phase each rank's windows fell", "[partition]") {
  // The default pod sets up through the protocol, runs its accesses, then tears down: every
  // rank has windows in each phase, and the protocol's phases take most of them (their
  // packets are few and far apart in time; the access phase's windows are full).
  const PodsimRun split =
      run_podsim_mpi(2, {"run", "--quiet", "--set", "workload.traffic.accesses=300"});
  INFO(split.err);
  REQUIRE(split.run);
  for (const auto& r : split.run->at("partition").at("per_rank").as_array()) {
    const auto windows = [&](const char* phase) {
      return r.at("phases").at(phase).at("windows").to_number<std::uint64_t>();
    };
    CHECK(windows("setup") > 0);
    CHECK(windows("access") > 0);
    CHECK(windows("teardown") > 0);
    CHECK(windows("setup") > windows("access"));
    // Its 4 GPUs keep their 16 outstanding accesses each in packets of its own.
    CHECK(r.at("packets_peak").to_number<std::uint64_t>() >= 4 * 16);
  }
}

TEST_CASE("a pod with no lookahead between ranks is refused, and earlier results are kept",
          "[partition]") {
  const std::string out =
      (fs::path(podsim::test::write_temp_file("x", "")).parent_path() / "no-lookahead").string();
  fs::create_directories(out);
  std::ofstream(fs::path(out) / "run.json") << "{}";
  const PodsimRun r =
      run_podsim_mpi(2,
                     {"run", "--out", out, "--set", "fabric.link.cable_length=0m", "--set",
                      "fabric.port.pipeline_latency=0ns", "--set", "fabric.port.serdes_latency=0ns",
                      "--set", "fabric.port.fec_latency=0ns"},
                     false);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot split the pod across 2 ranks") != std::string::npos);
  CHECK(r.err.find("takes no time") != std::string::npos);
  CHECK(r.err.find("internal error") == std::string::npos);
  CHECK(slurp((fs::path(out) / "run.json").string()) == "{}");
}

TEST_CASE("an output directory rank 0 cannot make ends every rank, exit 2", "[partition]") {
  const std::string file = podsim::test::write_temp_file("not-a-directory", "x");
  const PodsimRun r = run_podsim_mpi(
      3, {"run", "--quiet", "--out", file, "--set", "workload.traffic.accesses=20"}, false);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("cannot create the output directory") != std::string::npos);
}

TEST_CASE(
    "a stale importer's isolation violations and its stale import are the same split over 2 "
    "and 3 ranks",
    "[partition][isolation]") {
  same_at_every_rank_count(
      {"run", "--quiet", podsim::test::source_path("configs/study-isolation.json")}, {2, 3});
}

TEST_CASE("a buffer leaked at teardown (B3) is named and counted the same split over 2 ranks",
          "[partition]") {
  // B3's leak on GPU 0, beside an import and accesses across the cut.
  const std::string cfg = podsim::test::write_temp_file("b3-split.json", R"({
    "pod": {"gpus": 2},
    "gpu": {"driver": {"reintroduce_bugs": ["B3"]}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "buf"},
      {"gpu": 0, "op": "export", "buffer": "buf", "name": "h"},
      {"gpu": 0, "op": "close", "buffer": "buf"},
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h1"},
      {"gpu": 1, "op": "send_handle", "handle": "h1", "to": 0},
      {"gpu": 0, "op": "import", "handle": "h1", "name": "f"},
      {"gpu": 0, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 0, "op": "access", "mappings": ["m"], "accesses": 50}
    ]}})");
  same_at_every_rank_count({"run", "--quiet", cfg}, {2});
  const PodsimRun one = run_podsim({"run", "--quiet", cfg});
  CHECK(one.stat("pod.summary.invariant_violations") == 1);
}

TEST_CASE("a run the watchdog stops split over 2 and 3 ranks gives the one-rank outputs",
          "[partition][watchdog]") {
  // GPU 0's link stalls past sim.stall_limit: every rank stops at the same look, and the
  // failure names the queues of every rank.
  const std::string cfg = podsim::test::write_temp_file("stall-split.json", R"({"pod": {"gpus": 4},
      "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 3},
      {"gpu": 3, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 3, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 3, "op": "access", "mappings": ["m"], "accesses": 20000, "at": "500us"},
      {"op": "fault", "gpu": 0, "fault": "link_stall", "for": "5ms", "at": "510us"}]}})");
  same_at_every_rank_count({"run", "--quiet", cfg}, {2, 3});
  const PodsimRun r = run_podsim_mpi(2, {"run", "--quiet", cfg});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("pod.gpu0.port0 (transmit)") &&
                        Catch::Contains("pod.fabric.plane0.switch0 output 0"));
}

TEST_CASE("ranks started with different configs are refused before anything is written",
          "[partition]") {
  // An MPMD launch, or a config file that differs between hosts: each rank would simulate its
  // part of another pod, and rank 0 write the mixture as its own config's results.
  const std::string out =
      (std::filesystem::path(podsim::test::write_temp_file("x", "")).parent_path() / "out")
          .string();
  auto run = [&](const char* accesses) {
    return std::vector<std::string>{"run",   "--quiet",
                                    "--set", std::string("workload.traffic.accesses=") + accesses,
                                    "--out", out};
  };
  const PodsimRun r = podsim::test::run_podsim_mpi_apart(run("5"), run("50"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("rank 1 of 2 resolved another config than rank 0"));
  CHECK_FALSE(std::filesystem::exists(out));
  // A rank that refuses on its own (here an option a split run cannot honour) ends every rank,
  // rather than leaving rank 0 waiting for it.
  auto digest = run("5");
  digest.insert(digest.end(), {"--state-digest", out + ".digest"});
  const PodsimRun alone = podsim::test::run_podsim_mpi_apart(run("5"), digest);
  CHECK(alone.exit_code == 2);
  CHECK_THAT(alone.err, Catch::Contains("rank 1 of 2 refused the run where rank 0 did not"));
  // ... and rank 0 prints what rank 1 said (the other ranks are silenced).
  CHECK_THAT(alone.err, Catch::Contains("podsim: rank 1 said: podsim: --state-digest is not "
                                        "available when the pod is split across ranks"));
  CHECK_FALSE(std::filesystem::exists(out));
  // The same command on both runs.
  CHECK(podsim::test::run_podsim_mpi_apart(run("5"), run("5")).exit_code == 0);
  CHECK(std::filesystem::exists(std::filesystem::path(out) / "stats.json"));
}

TEST_CASE("ranks that do not all start the same command end together", "[partition]") {
  // An MPMD launch gives each rank its own command line: a rank that ends before its first
  // exchange with the others (its command line refused, --help, another command) would leave
  // them waiting for it. Each case runs under a 300 s timeout (exit 124 if it hangs).
  const std::string out =
      (std::filesystem::path(podsim::test::write_temp_file("x", "")).parent_path() / "out")
          .string();
  const std::vector<std::string> run{"run",   "--quiet", "--set", "workload.traffic.accesses=5",
                                     "--out", out};
  const PodsimRun bad = podsim::test::run_podsim_mpi_apart(run, {"run", "--no-such-option"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("the ranks did not all start the same command") &&
                          Catch::Contains("rank 0 started `podsim run`") &&
                          Catch::Contains("rank 1 started nothing (its command line was refused), "
                                          "saying: podsim run: unrecognised option "
                                          "'--no-such-option'"));
  const PodsimRun sweep = podsim::test::run_podsim_mpi_apart(
      run, {"sweep", "--quiet", "--vary", "workload.traffic.accesses=5", "--out", out});
  CHECK(sweep.exit_code == 2);
  CHECK_THAT(sweep.err, Catch::Contains("rank 1 started `podsim sweep`"));
  // Rank 0 asked only for help: it prints it, but the run did not happen.
  const PodsimRun help = podsim::test::run_podsim_mpi_apart({"run", "--help"}, run);
  CHECK(help.exit_code != 0);
  CHECK(help.exit_code != 124);
  CHECK_THAT(help.err, Catch::Contains("rank 0 started nothing") &&
                           Catch::Contains("rank 1 started `podsim run`"));
  // Both started nothing, one refused: the refused one's message is printed too.
  const PodsimRun version = podsim::test::run_podsim_mpi_apart({"--version"}, {"run", "--bogus"});
  CHECK(version.exit_code == 2);
  CHECK_THAT(version.err,
             Catch::Contains("rank 1 started nothing (its command line was refused), saying: "
                             "podsim run: unrecognised option '--bogus'"));
  CHECK_FALSE(std::filesystem::exists(out));
}
