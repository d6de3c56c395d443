// The pod's bring-up and the bring-up steps, run as a user runs them (stats.json, run.json).
#include <catch2/catch.hpp>

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
    "outlive it, and the teardown check names them",
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
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("invariant violated") && Catch::Contains("gpu1") &&
                        Catch::Contains("1 import(s)"));
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
  // The first activate on each host brings its 4 GPUs up: the ioctl (2 us), then for each the
  // PSP (20 us) and 16 ring PTEs (20 ns each), then the firmware seen READY 1 ms on; the
  // others' activate calls wait for it and find them READY.
  const double activate_ns = 2e3 + 4 * (20e3 + 16 * 20) + 1e6;
  for (int g = 0; g < 8; ++g) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "count") == 1);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".driver.activate_time", "mean") ==
          Approx(activate_ns).margin(0.5));
  }
  CHECK(r.run->at("workload_start_ns").to_number<double>() ==
        Approx(2 * 2e3 + activate_ns + 2e3).margin(0.5));
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
