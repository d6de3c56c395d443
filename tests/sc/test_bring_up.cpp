// The pod's bring-up and the bring-up steps, run as a user runs them (stats.json, run.json).
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <array>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::write_temp_file;

TEST_CASE(
    "the pod brings every GPU up (pPod, vPod, activate) before the workload, whose steps "
    "count their time from then",
    "[protocol][bring_up]") {
  auto r = run_podsim({"run", "--set", "workload.traffic.accesses=50"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Activation: the ioctl (2 us), the PSP (20 us), 16 ring PTEs (20 ns each: 8 GPUs, 2 pages
  // each), then the firmware (READY 100 us after its load) seen at the second look, 1 ms on.
  const double activate_ns = 2e3 + 20e3 + 16 * 20 + 1e6;
  for (int g = 0; g < 8; ++g) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "count") == 1);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "mean") ==
          Approx(activate_ns).margin(0.5));
  }
  // The workload starts once all are READY: two commits (2 us each) and the activation, then
  // the barrier's host latency (2 us).
  CHECK(r.run->at("workload_start_ns").to_number<double>() ==
        Approx(2 * 2e3 + activate_ns + 2e3).margin(0.5));
  // With direct setup the pod starts READY: no activation, the workload at time 0.
  auto direct = run_podsim(
      {"run", "--set", "workload.traffic.accesses=50", "--set", "workload.setup=direct"});
  REQUIRE(direct.exit_code == 0);
  CHECK(direct.stat("pod.gpu0.driver.activate_time", "count") == 0);
  CHECK(direct.run->at("workload_start_ns").to_number<double>() == 0);
}

TEST_CASE(
    "a GPU deactivated without telling its peers: their accesses are refused, their imports "
    "outlive it, and the teardown names them stale",
    "[protocol][bring_up]") {
  const std::string cfg = write_temp_file("deactivate.json", R"({
    "pod": {"gpus": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 0, "op": "deactivate", "at": "200us"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h2", "expect": "EOPNOTSUPP"},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "access", "mappings": ["m"], "duration": "400us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  // GPU 1's import outlives the export GPU 0 forgot: the driver's lazy cleanup, reported as a
  // stale import (stdout, run.json), not a violation.
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("stale imports     1 held at teardown") &&
                        Catch::Contains("gpu1 holds gpu0's export"));
  REQUIRE(r.run);
  const auto& stale = r.run->at("stale_imports").as_array();
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].at("importer").to_number<int>() == 1);
  CHECK(stale[0].at("exporter").to_number<int>() == 0);
  CHECK(r.stat("pod.gpu0.driver.connection_resets") == 1);
  CHECK(r.stat("pod.gpu0.driver.sent.NPA_REVOKE") == 0);   // no one was told
  CHECK(r.stat("pod.gpu0.npa_mmu.refused_disabled") > 0);  // GPU 1's accesses after it
  CHECK(r.stat("pod.gpu1.agent.remote_faults") > 0);
}

TEST_CASE(
    "bring-up steps: a bad vPod is EINVAL, a GPU deactivated and brought up again exports "
    "again",
    "[protocol][bring_up]") {
  const std::string cfg = write_temp_file("bring-up-steps.json", R"({
    "pod": {"gpus": 4},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 2, "op": "deactivate"},
      {"gpu": 2, "op": "vpod_commit", "members": [0, 1], "expect": "EINVAL"},
      {"gpu": 2, "op": "vpod_commit", "members": [2, 3], "vpod_size": 3, "expect": "EINVAL"},
      {"gpu": 2, "op": "ppod_commit", "ppod_size": 3},
      {"gpu": 2, "op": "vpod_commit", "members": [0, 1, 2, 3], "expect": "EINVAL"},
      {"gpu": 2, "op": "activate", "expect": "EINVAL"},
      {"gpu": 2, "op": "ppod_commit", "ppod_size": 4},
      {"gpu": 2, "op": "vpod_commit", "members": [2, 3]},
      {"gpu": 2, "op": "activate"},
      {"gpu": 2, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 2, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 2, "op": "send_handle", "handle": "h", "to": 3},
      {"gpu": 3, "op": "import", "handle": "h", "name": "f"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // every step as expected, everything given back
  CHECK(r.stat("pod.gpu2.driver.activate_time", "count") == 2);  // the pod's, then the step's
}

TEST_CASE(
    "a GPU activated again takes up its rings afresh: a peer that wrote to it while it was "
    "deactivated reaches it again",
    "[protocol][bring_up]") {
  // GPU 1 deactivates; GPU 0's import meanwhile is lost at its NPA MMU (ETIME, after the
  // 200 us write-back timeout); GPU 1 activates again and GPU 0's next import goes through.
  const std::string cfg = write_temp_file("reactivate.json", R"({
    "pod": {"gpus": 2},
    "gpu": {"driver": {"writeback_timeout": "200us"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 1, "op": "send_handle", "handle": "h", "to": 0},
      {"gpu": 1, "op": "deactivate"},
      {"gpu": 0, "op": "import", "handle": "h", "name": "f", "at": "100us", "expect": "ETIME"},
      {"gpu": 0, "op": "barrier", "name": "x"},
      {"gpu": 1, "op": "barrier", "name": "x"},
      {"gpu": 1, "op": "activate"},
      {"gpu": 1, "op": "barrier", "name": "y"},
      {"gpu": 0, "op": "barrier", "name": "y"},
      {"gpu": 0, "op": "import", "handle": "h", "name": "g"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu1.npa_mmu.refused_disabled") >= 1);  // the first HELLO's writes
  CHECK(r.stat("pod.gpu1.driver.received.NPA_REQ") == 1);   // the second import's
}

TEST_CASE("a vPod committed later is usable: every GPU of the pod has receive pages at every other",
          "[protocol][bring_up]") {
  // Two vPods of two; GPUs 0 and 2 commit a vPod of GPUs 0-2 and re-activate; 2 imports from 0.
  const std::string cfg = write_temp_file("vpod-grow.json", R"({
    "pod": {"gpus": 4, "vpod_size": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "deactivate"},
      {"gpu": 0, "op": "vpod_commit", "members": [0, 1, 2], "vpod_id": 5},
      {"gpu": 0, "op": "activate"},
      {"gpu": 2, "op": "deactivate"},
      {"gpu": 2, "op": "vpod_commit", "members": [0, 1, 2], "vpod_id": 5},
      {"gpu": 2, "op": "activate"},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 2},
      {"gpu": 2, "op": "import", "handle": "h", "name": "f"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu0.npa_mmu.faults") == 0);
  // Before the commits, GPU 2 was outside GPU 0's vPod: the same import is refused.
  auto before = run_podsim({"run", cfg, "--set", "workload.steps.4.members=[0, 1]", "--set",
                            "workload.steps.1.members=[0, 1]"});
  CHECK(before.exit_code == 1);
}

TEST_CASE(
    "an exporter deactivated while an import is under way answers nothing more: the importer "
    "times out",
    "[protocol][bring_up]") {
  const std::string cfg = write_temp_file("deactivate-exporter.json", R"({
    "pod": {"gpus": 2},
    "gpu": {"driver": {"response_timeout": "1ms"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 0, "process": 2, "op": "deactivate", "at": "50us"},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f", "expect": "ETIMEDOUT"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu0.driver.sent.NPA_RSP") == 0);
  CHECK(r.stat("pod.gpu0.driver.pins") == 0);
}

TEST_CASE("bring-up calls on one GPU are serialized: an activate waits for a deactivate",
          "[protocol][bring_up]") {
  // GPU 1's deactivate invalidates a mapped 64 MiB import (long); process 2's activate, asked
  // meanwhile, runs after it and leaves the GPU READY: a later import goes through.
  const std::string cfg = write_temp_file("bring-up-race.json", R"({
    "pod": {"gpus": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64MiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "c"},
      {"gpu": 0, "op": "export", "buffer": "c", "name": "hc"},
      {"gpu": 0, "op": "send_handle", "handle": "hc", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "deactivate"},
      {"gpu": 1, "process": 2, "op": "activate", "at": "725us"},
      {"gpu": 1, "process": 2, "op": "import", "handle": "hc", "name": "fc", "at": "3ms"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "count") == 2);
}

TEST_CASE("a host of 4 GPUs: its GPUs come up together, one after the other, before the workload",
          "[protocol][bring_up][host]") {
  auto r =
      run_podsim({"run", "--set", "pod.gpus_per_host=4", "--set", "workload.traffic.accesses=50"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // The first activate on each host brings its 4 GPUs up: the ioctl (2 us), then for each in
  // turn the PSP (20 us) and 16 ring PTEs (20 ns each), its firmware seen READY 1 ms after its
  // load; the others' activate calls wait for it and find them READY.
  const double each_ns = 20e3 + 16 * 20;
  for (int g = 0; g < 8; ++g) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "count") == 1);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "mean") ==
          Approx(2e3 + (g % 4 + 1) * each_ns + 1e6).margin(0.5));
  }
  // The workload starts once the last is READY: two commits (2 us each), the host's
  // activation, the barrier's host latency (2 us).
  CHECK(r.run->at("workload_start_ns").to_number<double>() ==
        Approx(2 * 2e3 + (2e3 + 4 * each_ns + 1e6) + 2e3).margin(0.5));
}

TEST_CASE(
    "a host's GPUs are deactivated together, one committed to another vPod leaves its local "
    "accelerators and comes up alone, and a vPod that does not match them is EINVAL",
    "[protocol][bring_up][host]") {
  const std::string cfg = write_temp_file("host-steps.json", R"({
    "pod": {"gpus": 4, "gpus_per_host": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "deactivate"},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h", "expect": "EOPNOTSUPP"},
      {"gpu": 2, "op": "alloc", "size": "64KiB", "name": "c"},
      {"gpu": 2, "op": "export", "buffer": "c", "name": "hc"},
      {"gpu": 1, "op": "vpod_commit", "members": [0, 1], "expect": "EINVAL"},
      {"gpu": 1, "op": "vpod_commit", "members": [0, 1], "vpod_id": 3},
      {"gpu": 1, "op": "activate"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h2", "expect": "EOPNOTSUPP"},
      {"gpu": 0, "op": "activate"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h3"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.gpu0.driver.activate_time", "count") == 2);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "count") == 2);
  CHECK(r.stat("pod.gpu2.driver.activate_time", "count") == 1);  // the other host: untouched
}

TEST_CASE(
    "no same-host shortcut: an import and the accesses between two GPUs of one host cross "
    "the switch",
    "[protocol][bring_up][host]") {
  const std::string cfg = write_temp_file("host-local.json", R"({
    "pod": {"gpus": 2, "gpus_per_host": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "access", "mappings": ["m"], "accesses": 100}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Every access was remote, its request through one switch, served by the exporter's NPA MMU.
  CHECK(r.stat("pod.gpu1.agent.local_accesses") == 0);
  CHECK(r.stat("pod.gpu1.agent.remote_latency_via_1_switch", "count") == 100);
  CHECK(r.stat("pod.gpu0.npa_mmu.translations") >= 100);
  CHECK(r.stat("pod.fabric.plane0.switch0.packets") >= 200);  // requests and responses
}

namespace {
// Host 0 is GPUs 0-3. GPU 1 imports and maps 64 MiB of GPU 4's (invalidating it takes
// ~330 us of PTE updates); GPU 1 exports 1 MiB to GPU 5, which accesses it at 1500 us; GPU 0
// deactivates its host at 1000 us; `more` adds steps.
std::string host_reset_config(const std::string& more) {
  return R"({"pod": {"gpus": 8, "gpus_per_host": 4}, "workload": {"kind": "scenario", "steps": [
    {"gpu": 4, "op": "alloc", "size": "64MiB", "name": "b"},
    {"gpu": 4, "op": "export", "buffer": "b", "name": "h4"},
    {"gpu": 4, "op": "send_handle", "handle": "h4", "to": 1},
    {"gpu": 1, "op": "import", "handle": "h4", "name": "fd"},
    {"gpu": 1, "op": "map", "fd": "fd", "name": "m"},
    {"gpu": 1, "process": 2, "op": "alloc", "size": "1MiB", "name": "b1"},
    {"gpu": 1, "process": 2, "op": "export", "buffer": "b1", "name": "h1"},
    {"gpu": 1, "process": 2, "op": "send_handle", "handle": "h1", "to": 5},
    {"gpu": 5, "op": "import", "handle": "h1", "name": "fd"},
    {"gpu": 5, "op": "map", "fd": "fd", "name": "m"},
    {"gpu": 5, "op": "access", "mappings": ["m"], "accesses": 200, "at": "1500us"},
    )" + more +
         "]}}";
}
}  // namespace

TEST_CASE(
    "a host's GPU reset while another's call takes it down is left alone, and comes back "
    "whole",
    "[protocol][bring_up][host][reset]") {
  // GPU 1 is reset while GPU 0's deactivation invalidates its import; its new process's
  // buffer (which gets the same buffer ID the import had) is its own.
  const std::string cfg = write_temp_file("host-reset-partner.json", host_reset_config(R"(
    {"gpu": 0, "op": "deactivate", "at": "1000us"},
    {"op": "reset_node", "gpu": 1, "at": "1100us", "down_for": "20us"},
    {"gpu": 1, "process": 3, "op": "alloc", "size": "1MiB", "name": "nb", "at": "1150us"},
    {"gpu": 1, "process": 3, "op": "map", "buffer": "nb", "name": "nm", "at": "1500us"},
    {"gpu": 1, "process": 3, "op": "close", "buffer": "nb"})"));
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK_THAT(r.err, !Catch::Contains("internal error") && !Catch::Contains("gpu1 still holds"));
  // GPU 1 came back READY: GPU 5's accesses to its export (gone with the reset) fault there.
  CHECK(r.stat("pod.gpu1.driver.device_resets") == 1);
  CHECK(r.stat("pod.gpu1.npa_mmu.refused_disabled") == 0);
}

TEST_CASE(
    "a reset of the GPU whose call takes its host down leaves the others' parts to finish: "
    "each is down, gives back what it held, and refuses accesses",
    "[protocol][bring_up][host][reset]") {
  const std::string cfg = write_temp_file("host-reset-caller.json", host_reset_config(R"(
    {"gpu": 0, "op": "deactivate", "at": "1000us", "expect": "ENODEV"},
    {"op": "reset_node", "gpu": 0, "at": "1100us", "down_for": "20us"})"));
  // (The teardown's revoke of GPU 4's export waits seconds for GPU 1, which is down.)
  auto r = run_podsim({"run", cfg, "--set", "sim.max_time=30s"});
  INFO(r.err);
  // GPU 1's deactivation went on: its import of GPU 4's buffer released, NPA translation off,
  // so GPU 5's accesses are refused. (GPU 5's import of GPU 1's export outlives it, as it
  // does whenever an exporter is deactivated without telling its peers: a stale import.)
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.err, !Catch::Contains("still holds"));
  CHECK_THAT(r.out, Catch::Contains("gpu5 holds gpu1's export"));
  CHECK(r.stat("pod.gpu1.npa_mmu.refused_disabled") > 0);
  CHECK(r.stat("pod.gpu5.agent.remote_faults") == 200);
}

TEST_CASE(
    "a reset of the GPU whose call brings its host up leaves the others to come up READY on "
    "their own",
    "[protocol][bring_up][host][reset]") {
  const std::string cfg = write_temp_file("host-reset-activation.json", R"({
    "pod": {"gpus": 8, "gpus_per_host": 4},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "process": 2, "op": "alloc", "size": "64KiB", "name": "b1"},
      {"gpu": 1, "process": 2, "op": "export", "buffer": "b1", "name": "h1"},
      {"gpu": 1, "process": 2, "op": "send_handle", "handle": "h1", "to": 5},
      {"gpu": 0, "op": "deactivate", "at": "100us"},
      {"gpu": 0, "op": "activate", "at": "300us", "expect": "ENODEV"},
      {"op": "reset_node", "gpu": 0, "at": "1000us", "down_for": "20us"},
      {"gpu": 5, "op": "import", "handle": "h1", "name": "f", "at": "1500us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);  // GPU 5's import from GPU 1 went through
  for (int g = 1; g <= 3; ++g) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "count") == 2);
  }
}

TEST_CASE(
    "a pPod commit on a READY GPU takes its host down, an activate on a READY GPU brings up "
    "its CONFIGURED local accelerators, and a GPU reset while UNCONFIGURED comes back in the "
    "pod's pPod",
    "[protocol][bring_up][host]") {
  const std::string cfg = write_temp_file("host-ppod.json", R"({
    "pod": {"gpus": 8, "gpus_per_host": 4},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "ppod_commit", "ppod_size": 8},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b", "at": "10us"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h", "expect": "EOPNOTSUPP"},
      {"gpu": 1, "op": "vpod_commit", "members": [0, 1, 2, 3, 4, 5, 6, 7]},
      {"gpu": 0, "op": "vpod_commit", "members": [0, 1, 2, 3, 4, 5, 6, 7]},
      {"gpu": 0, "op": "activate", "at": "100us"},
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "c", "at": "1500us"},
      {"gpu": 1, "op": "export", "buffer": "c", "name": "hc"},
      {"gpu": 5, "op": "ppod_commit", "ppod_size": 1, "at": "2ms"},
      {"op": "reset_node", "gpu": 5, "at": "2500us", "down_for": "20us"},
      {"gpu": 4, "op": "ppod_commit", "ppod_size": 8, "at": "3ms"},
      {"gpu": 4, "op": "vpod_commit", "members": [0, 1, 2, 3, 4, 5, 6, 7]}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "an activation whose firmware is stalled past the READY poll's limit fails with ETIMEDOUT, "
    "everything undone, and succeeds once the stall is over",
    "[protocol][bring_up][faults]") {
  // The poll looks every 1 ms up to 2000 times (about 2 s); the firmware stalls 3 s.
  const std::string cfg = write_temp_file("activate-etimedout.json", R"({
    "pod": {"gpus": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "deactivate"},
      {"op": "fault", "gpu": 1, "fault": "firmware_stall", "for": "3s"},
      {"gpu": 1, "op": "activate", "expect": "ETIMEDOUT"},
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h", "expect": "EOPNOTSUPP"},
      {"gpu": 1, "op": "activate", "at": "3100ms"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h2"}
    ]}})");
  auto r = run_podsim({"run", cfg, "--set", "sim.max_time=10s"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "count") == 2);  // the bring-up's and the last
}

namespace {
// Host 0 is GPUs 0-3; each of them exports a buffer at 5 ms (`expect[g]`: what the export
// returns, EOPNOTSUPP unless READY); `steps` before.
std::string host_exports_config(const std::string& steps,
                                const std::array<const char*, 4>& expect) {
  std::string s = R"({"pod": {"gpus": 8, "gpus_per_host": 4}, "workload": {"kind": "scenario",
    "steps": [)" + steps;
  for (int g = 0; g < 4; ++g)
    s += fmt::format(R"(,
      {{"gpu": {0}, "process": 2, "op": "alloc", "size": "64KiB", "name": "b", "at": "5ms"}},
      {{"gpu": {0}, "process": 2, "op": "export", "buffer": "b", "name": "h", "expect": "{1}"}})",
                     g, expect[g]);
  return s + "]}}";
}
}  // namespace

TEST_CASE(
    "a reset of the GPU whose call takes its host down, before the others' parts began, "
    "leaves them to be taken down",
    "[protocol][bring_up][host][reset]") {
  // GPU 2 deactivates at 100 us; GPU 0's part (PSP, 20 us) is under way when GPU 2 is reset,
  // before GPU 1's and 3's began. They go down all the same; GPU 2 comes back READY.
  const std::string cfg =
      write_temp_file("host-reset-deactivation-early.json",
                      host_exports_config(R"(
        {"gpu": 2, "op": "deactivate", "at": "100us", "expect": "ENODEV"},
        {"op": "reset_node", "gpu": 2, "at": "110us", "down_for": "20us"})",
                                          {"EOPNOTSUPP", "EOPNOTSUPP", "OK", "EOPNOTSUPP"}));
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE(
    "a reset of the GPU whose call brings its host up, before the others' parts began, "
    "leaves them to come up",
    "[protocol][bring_up][host][reset]") {
  // GPU 1 activates its host at 300 us; it is reset during its own part (GPU 0's is done,
  // GPU 2's and 3's have not begun). All four end READY, 2 and 3 by this call.
  const std::string cfg = write_temp_file("host-reset-activation-early.json",
                                          host_exports_config(R"(
        {"gpu": 1, "op": "deactivate", "at": "100us"},
        {"gpu": 1, "op": "activate", "at": "300us", "expect": "ENODEV"},
        {"op": "reset_node", "gpu": 1, "at": "330us", "down_for": "20us"})",
                                                              {"OK", "OK", "OK", "OK"}));
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.stat("pod.gpu2.driver.activate_time", "count") == 2);
  CHECK(r.stat("pod.gpu3.driver.activate_time", "count") == 2);
}

TEST_CASE(
    "a reset of the GPU whose call takes its host down keeps the host's bring-up lock held "
    "until the others' parts finish: a call queued behind it runs after them",
    "[protocol][bring_up][host][reset]") {
  // GPU 0's deactivation takes GPU 1 down (its 64 MiB import of GPU 4's takes ~330 us to
  // invalidate); GPU 0 is reset meanwhile, and GPU 2's activate, queued for the lock, runs
  // only once GPU 1 is down, and brings 1-3 back. GPU 1 then exports to GPU 5, whose
  // accesses are served (before, the activate ran while GPU 1 was going down, and left it
  // READY with NPA translation off: every access refused).
  const std::string cfg = write_temp_file("host-reset-lock.json", R"({
    "pod": {"gpus": 8, "gpus_per_host": 4},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 4, "op": "alloc", "size": "64MiB", "name": "b"},
      {"gpu": 4, "op": "export", "buffer": "b", "name": "h4"},
      {"gpu": 4, "op": "send_handle", "handle": "h4", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h4", "name": "fd"},
      {"gpu": 1, "op": "map", "fd": "fd", "name": "m"},
      {"gpu": 0, "op": "deactivate", "at": "1000us", "expect": "ENODEV"},
      {"gpu": 2, "op": "activate", "at": "1010us"},
      {"op": "reset_node", "gpu": 0, "at": "1030us", "down_for": "20us"},
      {"gpu": 1, "process": 3, "op": "alloc", "size": "1MiB", "name": "b", "at": "5ms"},
      {"gpu": 1, "process": 3, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 1, "process": 3, "op": "send_handle", "handle": "h", "to": 5},
      {"gpu": 5, "process": 3, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 5, "process": 3, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 5, "process": 3, "op": "access", "mappings": ["m"], "accesses": 30}
    ]}})");
  // (The teardown's revoke of GPU 4's export waits seconds for GPU 1, which forgot it.)
  auto r = run_podsim({"run", cfg, "--set", "sim.max_time=30s"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.stat("pod.gpu5.agent.remote_faults") == 0);
  CHECK(r.stat("pod.gpu1.npa_mmu.refused_disabled") == 0);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "count") == 2);
}

TEST_CASE(
    "an activation that times out takes back down only the GPUs it brought up: not one reset "
    "meanwhile, and their time is not recorded",
    "[protocol][bring_up][host][reset][faults]") {
  // GPU 0 activates its host at 300 us; GPU 3's firmware is stalled, so the call times out
  // (3 looks) about 2.4 ms later, after GPUs 0-2 were READY; GPU 1 is reset in between and is
  // no longer the call's: it stays READY. GPUs 0 and 2 go back to CONFIGURED.
  const std::string cfg =
      write_temp_file("host-activation-undo.json",
                      host_exports_config(R"(
        {"gpu": 0, "op": "deactivate", "at": "100us"},
        {"op": "fault", "gpu": 3, "fault": "firmware_stall", "for": "10ms", "at": "290us"},
        {"gpu": 0, "op": "activate", "at": "300us", "expect": "ETIMEDOUT"},
        {"op": "reset_node", "gpu": 1, "at": "1500us", "down_for": "20us"})",
                                          {"EOPNOTSUPP", "OK", "EOPNOTSUPP", "EOPNOTSUPP"}));
  auto r = run_podsim({"run", cfg, "--set", "gpu.driver.firmware_poll_limit=3"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  for (int g : {0, 2, 3}) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "count") == 1);
  }
}

TEST_CASE(
    "a host's GPU that is down after a reset takes no part in its partner's bring-up call and "
    "comes back READY",
    "[protocol][bring_up][host][reset]") {
  // GPU 1 is down from 100 us to 600 us; GPU 0 deactivates its host at 200 us (then, in the
  // second run, commits a pPod instead, which deactivates it too). GPU 1 comes back READY.
  for (const char* call : {R"("op": "deactivate")", R"("op": "ppod_commit", "ppod_size": 4)"}) {
    INFO(call);
    const std::string cfg = write_temp_file("host-down-partner.json", fmt::format(R"({{
      "pod": {{"gpus": 4, "gpus_per_host": 2}},
      "workload": {{"kind": "scenario", "steps": [
        {{"op": "reset_node", "gpu": 1, "at": "100us", "down_for": "500us"}},
        {{"gpu": 0, {}, "at": "200us"}},
        {{"gpu": 1, "process": 2, "op": "alloc", "size": "64KiB", "name": "b", "at": "1ms"}},
        {{"gpu": 1, "process": 2, "op": "export", "buffer": "b", "name": "h1"}},
        {{"gpu": 0, "process": 2, "op": "alloc", "size": "64KiB", "name": "b", "at": "1ms"}},
        {{"gpu": 0, "process": 2, "op": "export", "buffer": "b", "name": "h0",
          "expect": "EOPNOTSUPP"}}
      ]}}}})",
                                                                                  call));
    auto r = run_podsim({"run", cfg});
    INFO(r.err);
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE(
    "a host activation whose caller was reset runs to its end within the teardown's wait, "
    "however long the firmware's READY poll",
    "[protocol][bring_up][host][reset]") {
  // GPU 1's firmware is stalled 50 ms (within the poll's 2 s); GPU 0, which brought the host
  // up, is reset meanwhile, so nothing waits for the call but the teardown, which must outlast
  // it (its revoke bound alone is 16 ms here).
  const std::string cfg = write_temp_file("host-orphan-activation.json", R"({
    "pod": {"gpus": 4, "gpus_per_host": 2},
    "sim": {"max_time": "20s"},
    "gpu": {"driver": {"response_timeout": "3ms", "release_timeout": "3ms",
                       "writeback_timeout": "2ms"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "deactivate", "at": "100us"},
      {"op": "fault", "gpu": 1, "fault": "firmware_stall", "for": "50ms", "at": "150us"},
      {"gpu": 0, "op": "activate", "at": "200us", "expect": "ENODEV"},
      {"op": "reset_node", "gpu": 0, "at": "300us", "down_for": "10us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "count") == 2);  // the bring-up's and this one
}

TEST_CASE("an export that races a deactivation of its GPU gets EOPNOTSUPP",
          "[protocol][bring_up]") {
  // The export's node allocation sleeps 50 us; the deactivation lands meanwhile.
  const std::string cfg = write_temp_file("export-race-deactivate.json", R"({
    "pod": {"gpus": 2},
    "gpu": {"driver": {"export_alloc_latency": "50us"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "b", "at": "100us"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h1", "expect": "EOPNOTSUPP"},
      {"gpu": 1, "process": 2, "op": "deactivate", "at": "103us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
}

TEST_CASE("a firmware stall that begins while the firmware is loading delays its READY",
          "[protocol][bring_up][faults]") {
  // GPU 1 is taken down, then activated at 300 us: PSP (20 us) and ring PTEs, then the load
  // (READY 100 us later). A stall from 330 us (the load under way) for 2 ms keeps it from
  // finishing: READY only after 2.33 ms, seen at the poll after it (every 1 ms): about 3 ms
  // after the call.
  const std::string cfg = write_temp_file("stall-while-loading.json", R"({
    "pod": {"gpus": 2},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "deactivate", "at": "100us"},
      {"gpu": 1, "op": "activate", "at": "300us"},
      {"op": "fault", "gpu": 1, "fault": "firmware_stall", "for": "2ms", "at": "330us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  REQUIRE(r.stat("pod.gpu1.driver.activate_time", "count") == 2);
  CHECK(r.stat("pod.gpu1.driver.activate_time", "max") > 2.03e6);  // ns: past the stall's end
}
