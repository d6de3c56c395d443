// Fault steps on the control path, run as a user runs them (scenario configs, checked through
// stats.json and run.json): what the pod does when a ring slot lands corrupted or a message
// leaves late.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <map>
#include <utility>
#include <vector>

#include "tests/support/run_podsim.hpp"

using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::write_temp_file;

namespace {
const boost::json::object& step(const PodsimRun& r, std::size_t n) {
  for (const auto& s : r.run->at("steps").as_array())
    if (s.at("step").to_number<std::size_t>() == n) return s.as_object();
  FAIL("no step " << n);
  throw;
}
double took_ns(const PodsimRun& r, std::size_t n) {
  return step(r, n).at("ended_ns").to_number<double>() -
         step(r, n).at("started_ns").to_number<double>();
}

// GPU 1 imports GPU 0's buffer twice (the first import's fd closed between), with `fault` at
// time 0 on `fault_gpu`.
std::string two_imports(const std::string& fault, int fault_gpu, const char* first_expect) {
  return R"({"pod": {"gpus": 2}, "workload": {"kind": "scenario", "steps": [
      {"op": "fault", "gpu": )" +
         std::to_string(fault_gpu) + ", " + fault + R"(},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f", "expect": ")" +
         first_expect + R"("},
      {"gpu": 1, "op": "import", "handle": "h", "name": "g"},
      {"gpu": 1, "op": "close_fd", "fd": "g"}
    ]}})";
}
}  // namespace

TEST_CASE(
    "a ring slot that lands corrupted: the receiver's firmware answers bad command, the "
    "sender gets ECOMM, and the next message goes through",
    "[protocol][faults]") {
  // GPU 1 imports from GPU 0: its first message to GPU 0 (HELLO) lands corrupted in GPU 0's
  // ring; the import asked again goes through.
  const std::string cfg =
      write_temp_file("corrupt.json", two_imports(R"("fault": "ring_corrupt")", 0, "ECOMM"));
  for (const char* transport : {"npa_writes", "control_class"}) {
    INFO(transport);
    auto r = run_podsim({"run", cfg, "--set", std::string("gpu.mailbox.transport=") + transport});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);  // both imports as expected, invariants held
    CHECK(r.stat("pod.gpu0.mailbox.ring_slots_corrupted") == 1);
    CHECK(r.stat("pod.gpu0.mailbox.errors_answered") == 1);
    CHECK(r.stat("pod.gpu1.driver.send_failures") == 1);
    // The corrupted HELLO was not carried out: GPU 0's driver saw one HELLO, the retry's.
    CHECK(r.stat("pod.gpu0.driver.received.HELLO") == 1);
    CHECK(r.stat("pod.gpu0.driver.received.NPA_REQ") == 1);
  }
}

TEST_CASE(
    "a message that leaves late: the import waits for it, by the delay, and nothing else "
    "changes",
    "[protocol][faults]") {
  // GPU 1's first command (the HELLO of its first import) leaves 300 us late.
  const std::string late = write_temp_file(
      "late.json", two_imports(R"("fault": "message_delay", "for": "300us")", 1, "OK"));
  const std::string plain = write_temp_file(
      "plain.json", two_imports(R"("fault": "message_delay", "for": "0us")", 1, "OK"));
  auto r = run_podsim({"run", late});
  auto base = run_podsim({"run", plain});
  INFO(r.err << base.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(base.exit_code == 0);
  // The first import took the delay longer, give or take the sender's polling (10-50 us).
  const double extra = took_ns(r, 4) - took_ns(base, 4);
  CHECK(extra >= 300e3 - 50e3);
  CHECK(extra <= 300e3 + 50e3);
  // The message's own round trip shows the delay; the same messages went, none failed.
  CHECK(r.stat("pod.gpu1.mailbox.round_trip", "max") >= 300e3);
  CHECK(base.stat("pod.gpu1.mailbox.round_trip", "max") < 10e3);
  CHECK(r.stat("pod.gpu1.mailbox.commands_sent") == base.stat("pod.gpu1.mailbox.commands_sent"));
  CHECK(r.stat("pod.gpu1.driver.send_failures") == 0);
}

TEST_CASE(
    "an importer whose NPA-domain buffer cannot be allocated: ENOMEM after the exporter "
    "granted the range, no release, and the next import succeeds",
    "[protocol][faults]") {
  const std::string cfg = write_temp_file(
      "import-enomem.json", two_imports(R"("fault": "import_alloc_failure")", 1, "ENOMEM"));
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // ENOMEM then OK as expected; invariants held at teardown
  CHECK(r.stat("pod.gpu1.driver.injected_failures") == 1);
  CHECK(r.stat("pod.gpu1.driver.import_errors") == 1);
  // Both imports asked the exporter, which granted both (the importer pinned for once) ...
  CHECK(r.stat("pod.gpu0.driver.received.NPA_REQ") == 2);
  CHECK(r.stat("pod.gpu0.driver.sent.NPA_RSP") == 2);
  CHECK(r.stat("pod.gpu0.driver.pins") == 1);
  // ... and the failed one sent no release: the only NPA_RELEASE is the teardown revoke's.
  CHECK(r.stat("pod.gpu1.driver.sent.NPA_RELEASE") == 1);
  CHECK(r.stat("pod.gpu0.driver.releases_missing") == 0);
  CHECK(r.stat("pod.gpu1.driver.imports_first") == 2);
}

TEST_CASE(
    "B2 put back: rings mapped by active-list position are harmless in a vPod of GPUs 0..n-1 "
    "and lose every message in one that is not",
    "[protocol][bugs]") {
  // Source identification, two vPods of four: GPU 1 imports from GPU 0 (vPod 0: IDs and
  // positions agree), GPU 5 from GPU 4 (vPod 1: GPU 5 is at position 1, so GPU 4 mapped no
  // ring page at 5 << 29).
  const std::string cfg = write_temp_file("b2.json", R"({
    "pod": {"gpus": 8, "vpod_size": 4, "addr_mode": "source_identification"},
    "gpu": {"driver": {"writeback_timeout": "200us"}},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 4, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 4, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 4, "op": "send_handle", "handle": "h", "to": 5},
      {"gpu": 5, "op": "import", "handle": "h", "name": "f"}
    ]}})");
  auto fixed = run_podsim({"run", cfg});
  INFO(fixed.err);
  CHECK(fixed.exit_code == 0);
  CHECK(fixed.stat("pod.gpu4.npa_mmu.faults") == 0);
  auto b2 = run_podsim({"run", cfg, "--set", R"(gpu.driver.reintroduce_bugs=["B2"])"});
  INFO(b2.err);
  CHECK(b2.exit_code == 1);
  CHECK_THAT(b2.err, Catch::Contains("step 7") && Catch::Contains("ETIME"));
  CHECK(b2.stat("pod.gpu4.npa_mmu.faults") > 0);          // GPU 5's ring writes
  CHECK(b2.stat("pod.gpu4.driver.received.HELLO") == 0);  // nothing reached GPU 4's driver
  CHECK(step(b2, 3).at("result").as_string() == "OK");    // vPod 0: harmless
}

TEST_CASE(
    "an export whose node and dma-buf cannot be allocated: ENOMEM, nothing exported, and the "
    "next export of the buffer succeeds",
    "[protocol][faults]") {
  const std::string cfg = write_temp_file("export-enomem.json", R"({
    "pod": {"gpus": 2}, "workload": {"kind": "scenario", "steps": [
      {"op": "fault", "gpu": 0, "fault": "export_alloc_failure"},
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "x", "expect": "ENOMEM"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);  // ENOMEM, then OK, as expected; invariants held at teardown
  CHECK(r.stat("pod.gpu0.driver.injected_failures") == 1);
  CHECK(r.stat("pod.gpu0.driver.exports") == 1);  // one handle made: the second call's
  CHECK(r.stat("pod.gpu0.driver.exports_repeated") == 0);
  CHECK(r.stat("pod.gpu0.driver.revokes") == 1);  // the one export, revoked at teardown
}

TEST_CASE("every firmware error status, 1 to 9, reaches the sender as ECOMM, and the next succeeds",
          "[protocol][faults]") {
  for (int status = 1; status <= 9; ++status) {
    INFO("status " << status);
    const std::string cfg = write_temp_file(
        "status.json",
        two_imports(R"("fault": "firmware_error", "status": )" + std::to_string(status), 0,
                    "ECOMM"));
    auto r = run_podsim({"run", cfg});
    INFO(r.err);
    CHECK(r.exit_code == 0);  // ECOMM, then OK, as expected
    CHECK(r.stat("pod.gpu0.mailbox.errors_answered") == 1);
    CHECK(r.stat("pod.gpu1.driver.send_failures") == 1);
  }
}

TEST_CASE(
    "with on_failure continue, a failed step is recorded and its process goes on, an import "
    "of a handle that was never sent fails rather than waiting, and the run ends with its checks",
    "[faults]") {
  // GPU 0's export fails (export_alloc_failure): its send_handle has nothing to send, GPU 1's
  // import learns the handle will not come, and its map has no fd; GPU 1's own export, after
  // them, still succeeds.
  const std::string cfg = podsim::test::write_temp_file("on-failure-continue.json", R"({
    "pod": {"gpus": 2},
    "workload": {"kind": "scenario", "on_failure": "continue", "steps": [
      {"op": "fault", "gpu": 0, "fault": "export_alloc_failure"},
      {"gpu": 0, "op": "alloc", "size": "4KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "alloc", "size": "4KiB", "name": "c"},
      {"gpu": 1, "op": "export", "buffer": "c", "name": "hc"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  REQUIRE(r.run);
  CHECK(r.run->at("finished").as_bool());
  const auto& failures = r.run->at("failures").as_array();
  REQUIRE(failures.size() == 4);  // the export, the send, the import, the map
  CHECK_THAT(std::string(failures[0].as_string()), Catch::Contains("returned ENOMEM"));
  CHECK_THAT(r.err, Catch::Contains("the handle \"h\" will not come"));
  CHECK(r.run->at("invariant_violations").as_array().empty());
  CHECK(r.stat("pod.gpu1.driver.exports") == 1);  // GPU 1 went on past its failures
}

TEST_CASE(
    "a flaw the campaign found: an NPA_RSP that times out is undone by the exporter, but the "
    "importer may still take it late, and then reaches a range it no longer holds",
    "[faults][invariants][isolation]") {
  const std::string cfg = podsim::test::source_path("tests/sc/configs/late-npa-rsp.json");
  auto alias = run_podsim({"run", cfg});
  INFO(alias.err);
  CHECK(alias.exit_code == 1);
  CHECK(alias.stat("pod.gpu2.driver.send_failures") == 1);  // the NPA_RSP's ETIME
  CHECK(alias.stat("pod.gpu0.agent.remote_reads") + alias.stat("pod.gpu0.agent.remote_writes") ==
        50);
  CHECK(alias.stat("pod.summary.invariant_violations") == 50);
  CHECK_THAT(alias.err, Catch::Contains("gpu2 served an access from gpu0") &&
                            Catch::Contains("after gpu0 had released it"));
  // Source identification freed GPU 0's own range with the undo: its accesses fault.
  auto ident = run_podsim({"run", cfg, "--set", "pod.addr_mode=source_identification"});
  INFO(ident.err);
  CHECK(ident.exit_code == 0);
  CHECK(ident.stat("pod.gpu0.agent.remote_faults") == 50);
  CHECK(ident.stat("pod.summary.invariant_violations") == 0);
}

namespace {
// GPU 1 loads and stores GPU 0's buffer; at 510 us GPU 0's link stops carrying anything for
// `stall`.
std::string link_stall(const std::string& stall) {
  return write_temp_file("link-stall.json",
                         R"({"pod": {"gpus": 2}, "workload": {"kind": "scenario", "steps": [
      {"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 0, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 0, "op": "send_handle", "handle": "h", "to": 1},
      {"gpu": 1, "op": "import", "handle": "h", "name": "f"},
      {"gpu": 1, "op": "map", "fd": "f", "name": "m"},
      {"gpu": 1, "op": "access", "mappings": ["m"], "accesses": 20000, "at": "500us"},
      {"op": "fault", "gpu": 0, "fault": "link_stall", "for": ")" +
                             stall + R"(", "at": "510us"}]}})");
}
}  // namespace

TEST_CASE("a link that stalls delays what crosses it and loses nothing", "[faults][watchdog]") {
  auto calm = run_podsim({"run", "--quiet", link_stall("1ns")});
  auto r = run_podsim({"run", "--quiet", link_stall("300us")});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.remote_accesses") == 20000);
  CHECK(r.stat("pod.summary.invariant_violations") == 0);
  // Accesses in flight waited out the stall.
  CHECK(r.stat("pod.summary.latency.remote", "max") > 300'000);
  CHECK(calm.stat("pod.summary.latency.remote", "max") < 50'000);
}

TEST_CASE("the watchdog stops a run whose queues stop moving and names them",
          "[faults][watchdog]") {
  // Stalled for 5 ms, past sim.stall_limit (1 ms): the run stops at the first look after the
  // limit, and says which queues held packets and why.
  auto r = run_podsim({"run", "--quiet", link_stall("5ms")});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("stuck at 3 ms: 2 queue(s) held packets and sent none for "
                                    "sim.stall_limit (1 ms") &&
                        Catch::Contains("pod.gpu0.port0 (transmit): ") &&
                        Catch::Contains("pod.fabric.plane0.switch0 output 0: ") &&
                        Catch::Contains("its link is stalled until 6.538 ms") &&
                        !Catch::Contains("had not finished at sim.max_time"));
  REQUIRE(r.run);
  CHECK_FALSE(r.run->at("finished").as_bool());
  CHECK_THAT(std::string(r.run->at("failures").as_array().at(0).as_string()),
             Catch::StartsWith("stuck at 3 ms"));
  CHECK(r.run->at("simulated_time_ns").to_number<double>() == 3e6);
  // With the watchdog off, the same run waits the stall out and completes.
  auto patient = run_podsim({"run", "--quiet", link_stall("5ms"), "--set", "sim.stall_limit=0s"});
  INFO(patient.err);
  CHECK(patient.exit_code == 0);
  CHECK(patient.stat("pod.summary.remote_accesses") == 20000);
  // A limit past the stall: the same.
  auto longer = run_podsim({"run", "--quiet", link_stall("5ms"), "--set", "sim.stall_limit=6ms"});
  CHECK(longer.exit_code == 0);
  // A stall for good, the watchdog off: the run waits out sim.max_time, unfinished.
  auto forever = run_podsim({"run", "--quiet", link_stall("1000000s"), "--set",
                             "sim.stall_limit=0s", "--set", "sim.max_time=20ms"});
  CHECK(forever.exit_code == 1);
  CHECK_THAT(forever.err, Catch::Contains("had not finished at sim.max_time (20ms): step ") &&
                              Catch::Contains(" not done"));
  // run.json lists the steps under way as they stood.
  REQUIRE(forever.run);
  const auto& unfinished = forever.run->at("unfinished_steps").as_array();
  REQUIRE_FALSE(unfinished.empty());
  CHECK(unfinished[0].at("result").as_string() == "UNFINISHED");
  CHECK(unfinished[0].at("ended_ns").to_number<double>() == 20e6);
  auto bad = run_podsim({"run", "--quiet", "--set", "sim.stall_limit=-1ms"});
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("sim.stall_limit"));
}

namespace {
// GPU 1 imports GPU 0's buffers while GPU 0's firmware loses commands: for each batch, a
// buffer of its own, a firmware_drop of `lost` commands at `at_us`, then `lost` imports (each
// one message, lost: ETIME) and one more import expecting `then`.
std::string lossy_imports(const std::vector<std::pair<int, int>>& batches, const char* then) {
  std::string steps;
  for (std::size_t k = 0; k < batches.size(); ++k)
    steps += fmt::format(
        R"({{"gpu": 0, "op": "alloc", "size": "64KiB", "name": "b{0}"}},
        {{"gpu": 0, "op": "export", "buffer": "b{0}", "name": "h{0}"}},
        {{"gpu": 0, "op": "send_handle", "handle": "h{0}", "to": 1}}, )",
        k);
  int process = 1;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    const auto [at_us, lost] = batches[k];
    steps += fmt::format(
        R"({{"op": "fault", "gpu": 0, "fault": "firmware_drop", "count": {}, "at": "{}us"}})", lost,
        at_us);
    for (int i = 0; i < lost; ++i)
      steps += fmt::format(
          R"(, {{"gpu": 1, "process": {}, "op": "import", "handle": "h{}", "name": "x{}_{}", )"
          R"("expect": "ETIME"{}}})",
          process, k, k, i, i == 0 ? fmt::format(R"(, "at": "{}us")", at_us + 10) : "");
    steps += fmt::format(
        R"(, {{"gpu": 1, "process": {}, "op": "import", "handle": "h{}", "name": "ok{}", )"
        R"("expect": "{}", "at": "{}us"}}{})",
        process + 1, k, k, then, at_us + 500 + lost * 200,  // after the lost ones
        k + 1 < batches.size() ? ", " : "");
    process += 2;
  }
  return R"({"pod": {"gpus": 2}, "gpu": {"driver": {"writeback_timeout": "100us"}},
    "workload": {"kind": "scenario", "on_failure": "continue", "teardown": false,
    "steps": [)" +
         steps + "]}}";
}
}  // namespace

TEST_CASE(
    "commands a receiver's firmware lost free their ring slots once a later one gets through, "
    "so outages never add up to a full ring, while 63 lost in a row fill it for good",
    "[protocol][faults][enospc]") {
  // Two outages of 40 lost commands each, an import that gets through after each: 80 lost in
  // all, more than a ring holds, yet every import after an outage works (it moved the
  // write-back read pointer past the lost ones).
  auto twice = run_podsim(
      {"run", write_temp_file("lossy.json", lossy_imports({{0, 40}, {20'000, 40}}, "OK"))});
  INFO(twice.err);
  CHECK(twice.exit_code == 0);
  CHECK(twice.stat("pod.gpu1.mailbox.ring_full") == 0);
  // 63 lost in a row: the ring is full and nothing can move its read pointer again (the
  // snapshot has no other way back, and neither has podsim): ENOSPC to that peer.
  auto full =
      run_podsim({"run", write_temp_file("lossy-full.json", lossy_imports({{0, 63}}, "ENOSPC"))});
  INFO(full.err);
  CHECK(full.exit_code == 0);
  CHECK(full.stat("pod.gpu1.mailbox.ring_full") >= 1);
}

TEST_CASE("a run ending at sim.max_time names the steps under way and those waiting to begin",
          "[faults]") {
  // GPU 1 is down from 100 us for 5 ms; GPU 0's import of its buffer is under way at the end
  // (2 ms), and GPU 1's second process has not begun its alloc.
  const std::string cfg = write_temp_file("max-time.json", R"({
    "pod": {"gpus": 2}, "sim": {"max_time": "2ms"},
    "workload": {"kind": "scenario", "steps": [
      {"gpu": 1, "op": "alloc", "size": "64KiB", "name": "b"},
      {"gpu": 1, "op": "export", "buffer": "b", "name": "h"},
      {"gpu": 1, "op": "send_handle", "handle": "h", "to": 0},
      {"op": "reset_node", "gpu": 1, "at": "100us", "down_for": "5ms"},
      {"gpu": 0, "op": "import", "handle": "h", "name": "f", "at": "200us", "expect": "ETIME"},
      {"gpu": 1, "process": 2, "op": "alloc", "size": "64KiB", "name": "c", "at": "1500us"}
    ]}})");
  auto r = run_podsim({"run", cfg});
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("step 4 (import on gpu0 process 1, under way since") &&
                        Catch::Contains("step 5 (alloc on gpu1 process 2, waiting since"));
  REQUIRE(r.run);
  std::map<std::size_t, std::string> results;
  for (const auto& s : r.run->at("unfinished_steps").as_array())
    results[s.at("step").to_number<std::size_t>()] = std::string(s.at("result").as_string());
  CHECK(results == std::map<std::size_t, std::string>{{4, "UNFINISHED"}, {5, "NOT_STARTED"}});
  CHECK_THAT(r.out, Catch::Contains("2 under way or waiting to begin when the run ended"));
}

TEST_CASE(
    "a GPU back from a reset at the very picosecond of a packet's arrival: an unrelated step "
    "just before changes nothing",
    "[faults][reset]") {
  // The config's last step is a signal 1 ps before GPU 2 comes back, as a switch hands GPU 2's
  // port a request. Whether the request found the port up depended on whether that step woke
  // the SystemC kernel just before (the return was a SystemC process); it is now an item of
  // the event queue, ordered by its contract: the port is still down for the request.
  const std::string path =
      podsim::test::source_path("tests/sc/configs/reset-same-picosecond-arrival.json");
  std::string text = podsim::test::slurp(path);
  // Without the comment lines at its top, then without its last step.
  while (text.rfind("//", 0) == 0)
    text.erase(0, text.find('\n') + 1);
  boost::json::value cfg = boost::json::parse(text);
  auto& steps = cfg.at("workload").at("steps").as_array();
  REQUIRE(steps.back().at("op") == "signal");
  steps.pop_back();
  const auto quiet = write_temp_file("reset-quiet.json", boost::json::serialize(cfg));
  const PodsimRun with = run_podsim({"run", path, "--quiet"});
  const PodsimRun without = run_podsim({"run", quiet, "--quiet"});
  INFO(with.err << without.err);
  REQUIRE(with.exit_code == 0);
  REQUIRE(without.exit_code == 0);
  CHECK(podsim::test::slurp(with.out_dir + "/stats.json") ==
        podsim::test::slurp(without.out_dir + "/stats.json"));
  CHECK(podsim::test::slurp(with.out_dir + "/latency.csv") ==
        podsim::test::slurp(without.out_dir + "/latency.csv"));
}
