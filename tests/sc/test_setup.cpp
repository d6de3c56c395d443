// workload.setup = direct: the pod starts in the state the protocol would have left, and the
// access phase runs as after the protocol: exactly when control messages leave no trace in
// the data path's caches (the control class), within 0.5% when they go through the NPA MMU.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::write_temp_file;
namespace json = boost::json;

namespace {

// The stats an access phase decides: the pod's latency, breakdown and throughput figures, and
// every stat of each GPU's compute agent, GPUVM, NPA MMU and VRAM (but the VRAM's utilisation,
// a share of the whole run's simulated time).
bool access_phase_stat(const std::string& key) {
  static const std::regex gpu(R"(pod\.gpu\d+\.(agent|gpuvm|npa_mmu|vram)\..*)");
  static const std::regex summary(
      R"(pod\.summary\.(remote_.*|latency\..*|achieved_bandwidth|access_phase_time|faults|retries|plane_balance|plane\d+\.wire_bytes))");
  if (key.find("channel_utilisation") != std::string::npos) return false;
  return std::regex_match(key, gpu) || std::regex_match(key, summary);
}

// With the control class (what-if), the control path leaves nothing in the data path's
// caches: direct setup gives exactly the protocol's state, caches and access phase. With the
// default transport, the protocol's last control writes leave the rings' pages in the
// exporters' NPA MMU caches, which direct setup does not: every other part is the same, and
// the access phase within a small tolerance.
void same_state_and_results(std::vector<std::string> sets, bool control_class = true) {
  if (control_class) sets.push_back("gpu.mailbox.transport=control_class");
  auto run = [&](const char* mode) {
    const std::string digest = write_temp_file(std::string("digest-") + mode + ".json", "");
    std::vector<std::string> args = {"run",  "--quiet", "--state-digest",
                                     digest, "--set",   std::string("workload.setup=") + mode};
    for (const auto& s : sets)
      args.insert(args.end(), {"--set", s});
    auto r = run_podsim(args);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(r, json::parse(slurp(digest)));
  };
  const auto [protocol, pd] = run("protocol");
  const auto [direct, dd] = run("direct");
  // The protocol took simulated time; direct setup took none: its access phase starts when
  // the barrier before it releases, the host latency (pod.host_latency: 2 us) after time 0.
  CHECK(pd.at("caches_at_ns").to_number<double>() > 2000);
  CHECK(pd.at("state_at_ns").to_number<double>() >= pd.at("caches_at_ns").to_number<double>());
  CHECK(dd.at("caches_at_ns").to_number<double>() == 2000);
  CHECK(dd.at("state_at_ns").to_number<double>() == 2000);
  // Every GPU's driver tables, page tables, VRAM allocator and rings, and its MMUs' caches as
  // the access phase starts, part by part.
  for (const char* what : {"state", "caches"}) {
    const json::object& p = pd.at(what).as_object();
    const json::object& d = dd.at(what).as_object();
    REQUIRE(p.size() == d.size());
    REQUIRE(p.size() >= 2 * 8);
    std::size_t differ = 0;
    for (const auto& kv : p) {
      INFO(what << " " << kv.key());
      if (!control_class && std::string(kv.key()).ends_with(".npa_mmu.caches")) {
        differ += d.at(kv.key()) != kv.value();
        continue;
      }
      CHECK(d.at(kv.key()) == kv.value());
    }
    if (!control_class && std::string(what) == "caches") CHECK(differ > 0);
  }
  if (!control_class) {
    const json::object& ps = protocol.stats->at("stats").as_object();
    const json::object& ds = direct.stats->at("stats").as_object();
    for (const char* k : {"pod.summary.remote_latency", "pod.summary.achieved_bandwidth"}) {
      INFO(k);
      const char* field = ps.at(k).as_object().contains("mean") ? "mean" : "value";
      CHECK(ds.at(k).at(field).to_number<double>() ==
            Approx(ps.at(k).at(field).to_number<double>()).epsilon(0.005));
    }
    CHECK(ds.at("pod.summary.remote_accesses") == ps.at("pod.summary.remote_accesses"));
    return;
  }
  // The access phase: the same results.
  const json::object& ps = protocol.stats->at("stats").as_object();
  const json::object& ds = direct.stats->at("stats").as_object();
  std::size_t compared = 0;
  for (const auto& kv : ps) {
    if (!access_phase_stat(std::string(kv.key()))) continue;
    INFO(kv.key());
    REQUIRE(ds.contains(kv.key()));
    CHECK(ds.at(kv.key()) == kv.value());
    ++compared;
  }
  CHECK(compared > 50);
  CHECK(ps.at("pod.summary.remote_accesses").at("value").to_number<double>() > 0);
  for (const char* f : {"latency.csv", "latency_histogram.csv", "breakdown.csv"}) {
    INFO(f);
    CHECK(slurp(protocol.out_dir + "/" + f) == slurp(direct.out_dir + "/" + f));
  }
  // What direct setup did not simulate: no protocol messages, no import times.
  CHECK(ps.at("pod.summary.messages.NPA_REQ").at("value").to_number<double>() > 0);
  CHECK(ds.at("pod.summary.messages.NPA_REQ").at("value").to_number<double>() == 0);
  CHECK(ds.at("pod.summary.import_time").at("count").to_number<double>() == 0);
}

}  // namespace

TEST_CASE("direct setup, 8 GPUs: the protocol's state, the same access phase", "[setup]") {
  same_state_and_results({"workload.traffic.accesses=1000"});
}

TEST_CASE(
    "direct setup, 8 GPUs, control writes through the NPA MMU: the protocol's state but the "
    "NPA MMU caches, an access phase within 0.5%",
    "[setup]") {
  same_state_and_results({"workload.traffic.accesses=1000"}, false);
}

TEST_CASE("direct setup, 8 GPUs in source identification: the same state and results", "[setup]") {
  same_state_and_results({"workload.traffic.accesses=500", "pod.addr_mode=source_identification",
                          "workload.traffic.access_size=256B", "workload.peers=3"});
}

TEST_CASE("direct setup, 72 GPUs: the protocol's state, the same access phase", "[setup]") {
  same_state_and_results(
      {"pod.gpus=72", "fabric.switch.ports=128", "workload.traffic.accesses=200"});
}

TEST_CASE("direct setup is for the all_to_all workload, and says so when it cannot proceed",
          "[setup]") {
  const std::string scenario =
      write_temp_file("direct-scenario.json",
                      R"({"workload": {"kind": "scenario", "setup": "direct",
          "steps": [{"gpu": 0, "op": "alloc", "size": "4KiB", "name": "b"}]}})");
  auto r = run_podsim({"run", scenario});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("workload.setup") && Catch::Contains("all_to_all"));
  CHECK_FALSE(r.out_dir_exists);
  // A buffer VRAM cannot hold: the run fails at once, naming the step.
  auto full = run_podsim({"run", "--set", "workload.setup=direct", "--set",
                          "gpu.vram.capacity=8MiB", "--set", "workload.buffer_size=16MiB"});
  CHECK(full.exit_code == 1);
  CHECK_THAT(full.err, Catch::Contains("direct setup") && Catch::Contains("ENOMEM"));
}

TEST_CASE(
    "a state digest is the setup's or none: an access phase too short for the setup to "
    "settle in writes no digest and says why",
    "[setup]") {
  // With 3 peers an exporter is still answering the last import about 10 us into the access
  // phase, and 50 accesses a GPU take about 3 us: the teardown begins first (or, without one,
  // the run ends), and what the drivers hold then is not what the setup left.
  const std::string digest =
      (std::filesystem::path(write_temp_file("marker", "")).parent_path() / "digest.json").string();
  for (const char* teardown : {"workload.teardown=true", "workload.teardown=false"}) {
    INFO(teardown);
    std::ofstream(digest) << R"({"state": {"an earlier run's": "digest"}})";  // goes too
    auto r = run_podsim({"run", "--quiet", "--state-digest", digest, "--set", "workload.peers=3",
                         "--set", "workload.traffic.accesses=50", "--set", teardown});
    CHECK(r.exit_code == 1);
    CHECK_THAT(r.err, Catch::Contains("--state-digest: no digest written") &&
                          Catch::Contains("workload.traffic.accesses"));
    CHECK_FALSE(std::filesystem::exists(digest));
    CHECK(r.run);  // the run's own outputs are its results, and kept
  }
  // Long enough, it is written, taken inside the access phase.
  auto r = run_podsim({"run", "--quiet", "--state-digest", digest, "--set", "workload.peers=3",
                       "--set", "workload.traffic.accesses=2000"});
  REQUIRE(r.exit_code == 0);
  const json::object d = json::parse(slurp(digest)).as_object();
  CHECK(d.at("state_at_ns").to_number<double>() >= d.at("caches_at_ns").to_number<double>());
  CHECK(d.at("state_at_ns").to_number<double>() <=
        r.run->at("phases").at("setup_ns").to_number<double>() +
            r.run->at("phases").at("access_ns").to_number<double>());
}

TEST_CASE("direct setup of a model trace whose groups overlap leaves the protocol's state",
          "[setup]") {
  // GPUs 2 and 3 are in both groups: each has a window for each, exported, and imports both
  // groups' peers. The protocol runs a GPU's steps in its list order (group a's window, its
  // imports, then group b's), and its VAs, buffers and NPA ranges follow that order.
  const std::string trace = write_temp_file("overlap.json", R"({
    "groups": {"a": [0, 1, 2, 3], "b": [2, 3, 4, 5]},
    "nodes": [
      {"id": "c0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
      {"id": "c1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
      {"id": "c2", "gpu": 2, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
      {"id": "c3", "gpu": 3, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
      {"id": "d2", "gpu": 2, "type": "collective", "op": "all_gather", "group": "b", "bytes": "64KiB", "deps": ["c2"]},
      {"id": "d3", "gpu": 3, "type": "collective", "op": "all_gather", "group": "b", "bytes": "64KiB", "deps": ["c3"]},
      {"id": "d4", "gpu": 4, "type": "collective", "op": "all_gather", "group": "b", "bytes": "64KiB"},
      {"id": "d5", "gpu": 5, "type": "collective", "op": "all_gather", "group": "b", "bytes": "64KiB"}
    ]})");
  auto run = [&](const char* mode) {
    const std::string digest = write_temp_file(std::string("model-") + mode + ".json", "");
    auto r = run_podsim({"run", "--quiet", "--state-digest", digest, "--set", "workload.kind=model",
                         "--set", "workload.model=" + trace, "--set",
                         "gpu.mailbox.transport=control_class", "--set",
                         std::string("workload.setup=") + mode});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return std::make_pair(r, json::parse(slurp(digest)));
  };
  const auto [protocol, pd] = run("protocol");
  const auto [direct, dd] = run("direct");
  for (const char* what : {"state", "caches"}) {
    const json::object& p = pd.at(what).as_object();
    const json::object& d = dd.at(what).as_object();
    REQUIRE(p.size() == d.size());
    for (const auto& kv : p) {
      INFO(what << " " << std::string(kv.key()));
      CHECK(kv.value() == d.at(kv.key()));
    }
  }
}
