// What a run writes besides stats.json: latency tables by path, histograms, the breakdown.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "sim/core/sanitizers.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::source_path;
namespace fs = std::filesystem;

namespace {
using Row = std::map<std::string, std::string>;
std::vector<Row> read_csv(const fs::path& p) {
  return podsim::test::read_csv(p.string());
}
const Row& find_path(const std::vector<Row>& rows, const std::string& path) {
  for (const Row& r : rows)
    if (r.at("path") == path) return r;
  FAIL("no row for path " << path);
  throw 0;
}
double d(const Row& r, const char* k) {
  return std::stod(r.at(k));
}
}  // namespace

TEST_CASE("latency by path: local, remote and by switches crossed, as CSV tables", "[outputs]") {
  // Two tiers: a request crosses one switch within a leaf, three across the spine. A share
  // of accesses is local.
  auto r = run_podsim(
      {"run", "--quiet", "--set", "pod.gpus=8", "--set", "fabric.topology=leaf_spine", "--set",
       "fabric.leaf_spine={\"gpus_per_leaf\": 4, \"spines\": 2}", "--set",
       "workload.traffic.local_fraction=0.25", "--set", "workload.traffic.accesses=500"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv(fs::path(r.out_dir) / "latency.csv");
  const Row& local = find_path(rows, "local");
  const Row& remote = find_path(rows, "remote");
  const Row& one = find_path(rows, "remote_via_1_switch");
  const Row& three = find_path(rows, "remote_via_3_switches");
  CHECK(d(local, "count") > 0);
  CHECK(d(local, "count") + d(remote, "count") == 8 * 500);
  CHECK(d(one, "count") + d(three, "count") == d(remote, "count"));
  CHECK(d(one, "count") > 0);
  CHECK(d(three, "count") > 0);
  // Local is fastest, then one switch, then three.
  CHECK(d(local, "p50_ns") < d(one, "p50_ns"));
  CHECK(d(one, "p50_ns") < d(three, "p50_ns"));
  // The remote row is stats.json's pod-wide remote latency, and its percentiles are ordered.
  CHECK(d(remote, "p50_ns") == r.stat("pod.summary.remote_latency", "p50"));
  CHECK(d(remote, "p99_ns") == r.stat("pod.summary.remote_latency", "p99"));
  CHECK(d(remote, "count") == r.stat("pod.summary.latency.remote", "count"));
  CHECK(d(three, "count") == r.stat("pod.summary.latency.remote_via_3_switches", "count"));
  // Every remote access has its per-hop breakdown, those across the spine too: the longest
  // round trip's trail (23 stamps) fits in a packet (Access::kMaxHops).
  CHECK(r.stat("pod.summary.remote_breakdown", "samples") == d(remote, "count"));
  for (const Row* row : {&local, &remote, &one, &three}) {
    CHECK(d(*row, "min_ns") <= d(*row, "p50_ns"));
    CHECK(d(*row, "p50_ns") <= d(*row, "p90_ns"));
    CHECK(d(*row, "p90_ns") <= d(*row, "p99_ns"));
    CHECK(d(*row, "p99_ns") <= d(*row, "p999_ns"));
    CHECK(d(*row, "p999_ns") <= d(*row, "max_ns"));
  }

  // The histogram's buckets hold every sample of each path, each in its range.
  std::map<std::string, double> counted;
  for (const Row& b : read_csv(fs::path(r.out_dir) / "latency_histogram.csv")) {
    counted[b.at("path")] += d(b, "count");
    CHECK(d(b, "lower_ns") < d(b, "upper_ns"));
  }
  CHECK(counted["remote"] == d(remote, "count"));
  CHECK(counted["local"] == d(local, "count"));
  CHECK(counted["remote_via_3_switches"] == d(three, "count"));

  // The breakdown's parts add up to the mean remote latency.
  double sum = 0;
  for (const Row& h : read_csv(fs::path(r.out_dir) / "breakdown.csv"))
    sum += d(h, "mean_ns");
  CHECK(sum == Approx(d(remote, "mean_ns")).epsilon(1e-6));
}

namespace {
boost::json::value read_json_file(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return boost::json::parse(ss.str());
}
double ts(const boost::json::value& e) {
  return e.at("ts").to_number<double>();
}
}  // namespace

TEST_CASE(
    "a run with a trace file writes a Perfetto timeline: driver calls, messages, steps, sampled "
    "accesses",
    "[outputs][trace]") {
  const std::string trace = (fs::temp_directory_path() / "podsim-test-timeline.json").string();
  auto r = run_podsim({"run", "--quiet", source_path("configs/revoke-under-load.json"), "--trace",
                       trace, "--trace-sample", "50"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto doc = read_json_file(trace);
  const auto& events = doc.at("traceEvents").as_array();
  std::map<std::string, const boost::json::object*> open;  // async id -> its 'b'
  std::map<std::string, int> names;                        // "gpu/track/name" -> count
  std::map<int, std::size_t> accesses;                     // by GPU
  std::size_t hops = 0;
  std::map<std::string, std::pair<std::string, int>> by_id;  // access id -> status, hops
  for (const auto& ev : events) {
    const auto& e = ev.as_object();
    const std::string ph(e.at("ph").as_string());
    if (ph == "M") continue;
    const std::string name(e.at("name").as_string());
    const auto pid = e.at("pid").to_number<int>();
    const auto tid = e.at("tid").to_number<int>();
    if (ph == "b") {
      const std::string key = std::string(e.at("id").as_string()) + "/" + name;
      open[key] = &e;
      if (std::string(e.at("cat").as_string()) == "access") {
        auto& slot = by_id[std::string(e.at("id").as_string())];
        if (name.rfind("load", 0) == 0 || name.rfind("store", 0) == 0) {
          ++accesses[pid];
          slot.first = e.at("args").at("status").as_string();
        } else {
          ++hops;
          ++slot.second;
        }
      }
    } else if (ph == "e") {
      // Every async slice ends, no earlier than it began.
      const std::string key = std::string(e.at("id").as_string()) + "/" + name;
      REQUIRE(open.count(key));
      CHECK(ts(ev) >= open[key]->at("ts").to_number<double>());
      open.erase(key);
      continue;
    }
    names[std::to_string(pid) + "/" + std::to_string(tid) + "/" + name]++;
  }
  CHECK(open.empty());
  // The exporter (gpu0) exports, handles three NPA_REQs and revokes; each importer imports,
  // and sends its NPA_REQ and NPA_RELEASE to gpu0.
  CHECK(names["0/1/export"] == 1);
  CHECK(names["0/1/revoke"] >= 1);
  for (int g = 1; g <= 3; ++g) {
    INFO("gpu" << g);
    CHECK(names["0/1/NPA_REQ from gpu" + std::to_string(g)] == 1);
    CHECK(names[std::to_string(g) + "/1/import"] == 1);
    CHECK(names[std::to_string(g) + "/2/NPA_REQ to gpu0"] == 1);
    CHECK(names[std::to_string(g) + "/2/NPA_RELEASE to gpu0"] == 1);
    CHECK(names[std::to_string(g) + "/101/access"] == 1);  // the scenario's steps, process 1
  }
  // One access in 50 of each GPU (the 1st, 51st, ...), faulted ones included, with its hops.
  std::size_t sampled = 0;
  for (int g = 0; g < 4; ++g) {
    double completed = 0;
    for (const char* s : {"remote_reads", "remote_writes", "remote_atomics", "local_accesses",
                          "faults", "remote_faults", "unreachable"})
      completed += r.stat("pod.gpu" + std::to_string(g) + ".agent." + s);
    INFO("gpu" << g << " completed " << completed);
    CHECK(accesses[g] == static_cast<std::size_t>((completed + 49) / 50));
    sampled += accesses[g];
  }
  CHECK(sampled > 1000);
  // A served remote access shows its way there and back: issue, GPUVM, port, link, switch,
  // link, port, NPA MMU, VRAM, and port, link, switch, link, port back.
  std::size_t served = 0;
  for (const auto& [id, s] : by_id)
    if (s.first == "ok") {
      ++served;
      CHECK(s.second >= 12);
    }
  CHECK(served > 100);
  CHECK(hops > 12 * served);
  CHECK(doc.at("otherData").at("dropped_sampled_accesses") == 0);
}

TEST_CASE(
    "the timeline joins each control message's sending to its handling on the other GPU with a "
    "flow arrow",
    "[outputs][trace]") {
  const std::string trace =
      (fs::temp_directory_path() / "podsim-test-timeline-flows.json").string();
  auto r =
      run_podsim({"run", "--quiet", "--trace", trace, "--set", "workload.traffic.accesses=50"});
  REQUIRE(r.exit_code == 0);
  const auto doc = read_json_file(trace);
  struct End {
    int pid = -1;
    double ts = 0;
    std::string name;
  };
  std::map<std::string, End> out, in;
  std::size_t handled = 0, legacy_s = 0, legacy_f = 0;
  for (const auto& ev : doc.at("traceEvents").as_array()) {
    const auto& o = ev.as_object();
    legacy_s += o.at("ph") == "s";
    legacy_f += o.at("ph") == "f";
    if (o.at("ph") != "X") continue;
    const std::string name(o.at("name").as_string());
    const bool handling =
        o.at("tid").to_number<int>() == 1 && name.find(" from gpu") != std::string::npos;
    handled += handling;
    const auto* bind = o.if_contains("bind_id");
    if (!bind) {
      CHECK_FALSE(handling);  // every handled message has its arrow
      continue;
    }
    End e{o.at("pid").to_number<int>(), o.at("ts").to_number<double>(), name};
    (o.contains("flow_in") ? in : out)[std::string(bind->as_string())] = e;
  }
  // HELLO, HELLO_ACK, NPA_REQ, NPA_RSP, NPA_REVOKE, NPA_RELEASE between 8 GPUs: hundreds.
  CHECK(handled > 100);
  CHECK(in.size() == handled);
  CHECK(out.size() == in.size());
  CHECK(legacy_s == out.size());  // the same arrows as the format's flow events
  CHECK(legacy_f == in.size());
  for (const auto& [id, h] : in) {
    INFO("flow " << id << ": " << h.name);
    REQUIRE(out.count(id));
    const End& s = out.at(id);
    // From the sender named in the handling, of the same message, no later than it.
    const std::string what = h.name.substr(0, h.name.find(" from gpu"));
    const int from = std::stoi(h.name.substr(h.name.find(" from gpu") + 9));
    CHECK(s.pid == from);
    CHECK(s.name == "send " + what);
    CHECK(s.ts <= h.ts);
    CHECK(s.pid != h.pid);
  }
}

TEST_CASE("a sampled access's switch and link hops also appear on their plane's tracks",
          "[outputs][trace]") {
  const std::string trace =
      (fs::temp_directory_path() / "podsim-test-timeline-fabric.json").string();
  auto r = run_podsim({"run", "--quiet", "--trace", trace, "--trace-sample", "10", "--set",
                       "fabric.planes=2", "--set", "workload.traffic.accesses=40"});
  REQUIRE(r.exit_code == 0);
  const auto doc = read_json_file(trace);
  std::map<int, std::string> process;                // pid -> name
  std::map<std::pair<int, int>, std::string> track;  // (pid, tid) -> name
  std::map<std::string, int> on_gpu, on_plane;       // hop name -> slices
  for (const auto& ev : doc.at("traceEvents").as_array()) {
    const auto& o = ev.as_object();
    const int pid = o.at("pid").to_number<int>();
    if (o.at("ph") == "M") {
      const auto* nv = o.at("args").as_object().if_contains("name");
      const std::string n(nv && nv->is_string() ? nv->as_string() : "");
      if (o.at("name") == "process_name") process[pid] = n;
      if (o.at("name") == "thread_name") track[{pid, o.at("tid").to_number<int>()}] = n;
      continue;
    }
    const auto* cat = o.if_contains("cat");
    if (o.at("ph") != "b" || !cat || *cat != "access") continue;
    const std::string name(o.at("name").as_string());
    if (process[pid].rfind("plane ", 0) == 0) {
      const std::string t = track[{pid, o.at("tid").to_number<int>()}];
      const std::string hop = name.substr(name.find(' ') + 1);  // "gpu3 req.switch"
      CHECK(((hop.find("switch") != std::string::npos) ? t == "switches" : t == "links"));
      ++on_plane[hop];
    } else if (name.find('.') != std::string::npos) {
      ++on_gpu[name];
    }
  }
  CHECK(process.count(1 << 20) == 1);
  CHECK(process[1 << 20] == "plane 0");
  CHECK(process[(1 << 20) + 1] == "plane 1");  // both planes carried sampled accesses
  // Every switch and link hop on a GPU's track appears once on its plane's tracks too.
  for (const char* hop : {"req.switch", "resp.switch", "req.link", "resp.link"}) {
    INFO(hop);
    CHECK(on_gpu[hop] > 0);
    CHECK(on_plane[hop] == on_gpu[hop]);
  }
  CHECK(on_plane.count("req.gpuvm") == 0);  // the GPU's own hops stay on the GPU
}

TEST_CASE("the timeline's sampled accesses are bounded by --trace-max-events", "[outputs][trace]") {
  const std::string trace = (fs::temp_directory_path() / "podsim-test-timeline-b.json").string();
  auto r =
      run_podsim({"run", "--trace", trace, "--trace-sample", "1", "--trace-max-events", "100"});
  REQUIRE(r.exit_code == 0);
  const auto doc = read_json_file(trace);
  CHECK(doc.at("otherData").at("access_events").to_number<int>() <= 100);
  CHECK(doc.at("otherData").at("dropped_sampled_accesses").to_number<int>() > 0);
  CHECK_THAT(r.err, Catch::Contains("sampled accesses were left out"));
  std::size_t access_events = 0, control = 0;
  for (const auto& ev : doc.at("traceEvents").as_array()) {
    const auto* cat = ev.as_object().if_contains("cat");
    if (!cat || ev.at("ph") == "e") continue;
    (std::string(cat->as_string()) == "access" ? access_events : control)++;
  }
  CHECK(access_events <= 100);
  CHECK(control > 0);  // control events are always kept
  CHECK(run_podsim({"run", "--trace", trace, "--trace-sample", "0"}).exit_code == 2);
}

TEST_CASE(
    "a file asked for beside the outputs may not overwrite one of them or another, and must "
    "be writable: exit 2 before the run, nothing written",
    "[outputs]") {
  const fs::path base = fs::temp_directory_path() / "podsim-extra-outputs";
  fs::remove_all(base);
  const std::string out = (base / "run").string();
  auto clash = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10", "-o", out,
                           "--access-log", out + "/stats.json"},
                          false);
  CHECK(clash.exit_code == 2);
  CHECK_THAT(clash.err, Catch::Contains("--access-log " + out +
                                        "/stats.json would overwrite the run's stats.json"));
  CHECK_FALSE(fs::exists(out));
  auto two = run_podsim({"run", "--quiet", "-o", out, "--trace", (base / "t.json").string(),
                         "--access-log", (base / "t.json").string()},
                        false);
  CHECK(two.exit_code == 2);
  CHECK_THAT(two.err, Catch::Contains("would overwrite --access-log's file"));
  auto nowhere = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10", "-o", out,
                             "--access-log", "/nonexistent/dir/a.trace"},
                            false);
  CHECK(nowhere.exit_code == 2);
  CHECK_THAT(nowhere.err, Catch::Contains("--access-log /nonexistent/dir/a.trace: cannot write"));
  CHECK_FALSE(fs::exists(fs::path(out) / "stats.json"));
  fs::remove_all(base);
}

TEST_CASE("stats.json says whether its run completed as configured", "[outputs]") {
  auto good = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10"});
  REQUIRE(good.stats);
  CHECK(good.stats->at("ok").as_bool());
  auto bad = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10", "--set",
                         "sim.max_time=1us"});  // the bring-up alone takes 1 ms
  CHECK(bad.exit_code == 1);
  REQUIRE(bad.stats);
  CHECK_FALSE(bad.stats->at("ok").as_bool());
}

TEST_CASE(
    "a failed run's CSVs and access log say so on their first line, a good run's begin "
    "with the header",
    "[outputs]") {
  const char* csvs[] = {"latency.csv", "latency_histogram.csv", "breakdown.csv", "timeseries.csv"};
  auto good = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10"});
  REQUIRE(good.exit_code == 0);
  for (const char* f : csvs) {
    INFO(f);
    const std::string text = podsim::test::slurp(good.out_dir + "/" + f);
    CHECK(text.rfind("# ", 0) == std::string::npos);
    CHECK_FALSE(read_csv(good.out_dir + "/" + f).empty());
  }
  // Stopped at sim.max_time in the middle of the access phase: latencies exist, but not the
  // configured run's.
  const fs::path log = fs::temp_directory_path() / "podsim-failed-run-access.trace";
  fs::remove(log);
  auto bad = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=100000", "--set",
                         "sim.max_time=1100us", "--access-log", log.string()});
  REQUIRE(bad.exit_code == 1);
  // The access log too (a trace that replays, but not the configured run's accesses).
  const std::string trace = podsim::test::slurp(log.string());
  CHECK(trace.rfind("# podsim: this run FAILED (finished: no", 0) == 0);
  CHECK(trace.find("\n# time_ns gpu op va size\n") != std::string::npos);
  fs::remove(log);
  for (const char* f : csvs) {
    INFO(f);
    const std::string text = podsim::test::slurp(bad.out_dir + "/" + f);
    CHECK(text.rfind("# podsim: this run FAILED (finished: no, 0 failure(s), 0 invariant "
                     "violation(s): see run.json)",
                     0) == 0);
    // The line after it is the header, as in a good run.
    const std::string good_text = podsim::test::slurp(good.out_dir + "/" + f);
    CHECK(text.substr(text.find('\n') + 1, good_text.find('\n')) ==
          good_text.substr(0, good_text.find('\n')));
  }
  CHECK_FALSE(read_csv(bad.out_dir + "/latency.csv").empty());
  // The report says the run failed, even with stats.json and run.json saying nothing.
  fs::remove(fs::path(bad.out_dir) / "run.json");
  const std::string stats = podsim::test::slurp(bad.out_dir + "/stats.json");
  std::ofstream(fs::path(bad.out_dir) / "stats.json")
      << std::regex_replace(stats, std::regex("\"ok\": false,?"), "");
  auto report = run_podsim({"report", bad.out_dir}, false);
  REQUIRE(report.exit_code == 0);
  const std::string html = podsim::test::slurp(bad.out_dir + "/report.html");
  CHECK_THAT(html,
             Catch::Contains("This run failed") && Catch::Contains("marked as from a failed run"));
}

TEST_CASE(
    "the summary names the pod's planes, explains what was not served, lists the resets "
    "and every file written",
    "[outputs]") {
  const fs::path log = fs::temp_directory_path() / "podsim-summary-access.trace";
  auto r = run_podsim(
      {"run", podsim::test::source_path("configs/node-reset.json"), "--access-log", log.string()});
  REQUIRE(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::StartsWith("podsim ") &&
                        Catch::Contains("| node-reset | 4 GPUs | 1 plane of single_switch |"));
  // Each way an access went unserved, with its count; the counts add up to "not served".
  const auto gpuvm = static_cast<std::uint64_t>(r.stat("pod.summary.gpuvm_faults"));
  const auto remote = static_cast<std::uint64_t>(r.stat("pod.summary.remote_faults"));
  const auto down = static_cast<std::uint64_t>(r.stat("pod.summary.unreachable"));
  CHECK(gpuvm > 0);
  CHECK(remote > 0);
  CHECK(static_cast<double>(gpuvm + remote + down) == r.stat("pod.summary.faults"));
  CHECK_THAT(r.out, Catch::Contains(fmt::format("; {} not served,", gpuvm + remote + down)) &&
                        Catch::Contains(fmt::format("  not served      {} found no valid mapping "
                                                    "in their own GPUVM",
                                                    gpuvm)) &&
                        Catch::Contains(fmt::format("{} refused by their exporter", remote)));
  CHECK_THAT(r.out, Catch::Contains("steps             78 step(s), every one OK\n"
                                    "  node resets     gpu2 at 1.928 ms\n"));
  CHECK_THAT(r.out, Catch::Contains(fmt::format(
                        "outputs           {}: config.json, stats.json, latency.csv, "
                        "latency_histogram.csv, breakdown.csv, timeseries.csv, {}, run.json\n",
                        r.out_dir, log.string())));
  fs::remove(log);
  // A pod of 18 planes says so.
  auto helios = run_podsim({"run", podsim::test::source_path("configs/helios-72.json"), "--set",
                            "workload.traffic.accesses=1"});
  REQUIRE(helios.exit_code == 0);
  CHECK_THAT(helios.out, Catch::Contains("| 72 GPUs | 18 planes of single_switch |"));
}

TEST_CASE("a file asked for through a symlink or at a device is written through, never replaced",
          "[outputs]") {
  const fs::path base = fs::temp_directory_path() / "podsim-write-through";
  fs::remove_all(base);
  fs::create_directories(base);
  const fs::path target = base / "target.trace", link = base / "link.trace";
  std::ofstream(target) << "old\n";
  fs::create_symlink(target, link);
  auto r = run_podsim({"run", "--quiet", "--set", "pod.gpus=2", "--set",
                       "workload.traffic.accesses=20", "--access-log", link.string()});
  REQUIRE(r.exit_code == 0);
  CHECK(fs::is_symlink(link));
  CHECK(podsim::test::slurp(target.string()).rfind("# time_ns gpu op va size\n", 0) == 0);
  CHECK_FALSE(fs::exists(base / "link.trace.tmp"));
  fs::remove_all(base);
  // A full device: the run says it could not write, keeps none of its outputs, and the device
  // is still a device. (Not under AddressSanitizer: an exception thrown after SystemC has
  // switched stacks makes it report false stack errors, google/sanitizers#189.)
#if !defined(__SANITIZE_ADDRESS__)
  if (fs::is_character_file("/dev/full")) {
    auto full = run_podsim({"run", "--quiet", "--set", "pod.gpus=2", "--set",
                            "workload.traffic.accesses=20", "--access-log", "/dev/full"});
    CHECK(full.exit_code == 1);
    CHECK_THAT(full.err, Catch::Contains("cannot write /dev/full: No space left on device") &&
                             Catch::Contains("none of the run's outputs were kept"));
    CHECK_FALSE(full.stats.has_value());
    CHECK_FALSE(fs::exists(fs::path(full.out_dir) / "latency.csv"));
    CHECK(fs::is_character_file("/dev/full"));
    CHECK_FALSE(fs::exists("/dev/full.tmp"));
  }
#endif
}

TEST_CASE("a run whose outputs hit the file-size limit says so and keeps none of them",
          "[outputs]") {
#if defined(__SANITIZE_ADDRESS__)
  WARN(
      "not under AddressSanitizer: the failed write's exception, thrown after SystemC has "
      "switched stacks, makes it report false stack errors (google/sanitizers#189)");
  return;
#endif
  // 100 blocks of 512 bytes: stats.json is larger. The kernel's SIGXFSZ would kill the process
  // half-way through its writes; podsim takes the failed write as an error instead.
  auto first = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=5"});
  REQUIRE(first.exit_code == 0);
  auto r = podsim::test::run_podsim_after(
      "ulimit -f 100; ",
      {"run", "--quiet", "--set", "workload.traffic.accesses=5", "--out", first.out_dir}, false);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Contains("cannot write") && Catch::Contains("File too large") &&
                        Catch::Contains("none of the run's outputs were kept"));
  for (const auto& e : fs::directory_iterator(first.out_dir))
    FAIL_CHECK("left in the output directory: " << e.path().filename().string());
}

TEST_CASE("a failed run's state digest and timeline say it failed", "[outputs]") {
  const fs::path base = fs::temp_directory_path() / "podsim-failed-json";
  fs::remove_all(base);
  fs::create_directories(base);
  const std::string dig = (base / "f.dig").string(), tl = (base / "f.json").string();
  auto bad = run_podsim(
      {"run", "--quiet", "--set", "sim.max_time=1200us", "--state-digest", dig, "--trace", tl});
  REQUIRE(bad.exit_code == 1);
  CHECK_THAT(podsim::test::slurp(dig), Catch::Contains("\"run_failed\": \"this run FAILED"));
  CHECK_THAT(podsim::test::slurp(tl),
             Catch::Contains("\"otherData\": {\"run_failed\": \"this run FAILED"));
  auto good = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=5",
                          "--state-digest", dig, "--trace", tl});
  REQUIRE(good.exit_code == 0);
  CHECK_THAT(podsim::test::slurp(dig), !Catch::Contains("run_failed"));
  CHECK_THAT(podsim::test::slurp(tl), !Catch::Contains("run_failed"));
  fs::remove_all(base);
}

TEST_CASE("a run removes the report drawn from an earlier run in its directory", "[outputs]") {
  auto first = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=5"});
  REQUIRE(first.exit_code == 0);
  REQUIRE(run_podsim({"report", first.out_dir}, false).exit_code == 0);
  REQUIRE(fs::exists(fs::path(first.out_dir) / "report.html"));
  auto again =
      run_podsim({"run", "--quiet", "--set", "sim.max_time=1us", "--out", first.out_dir}, false);
  CHECK(again.exit_code == 1);
  CHECK_FALSE(fs::exists(fs::path(first.out_dir) / "report.html"));
}

TEST_CASE("a run removes the half-written stats.json a killed run left", "[outputs]") {
  if (PODSIM_ASAN) {
    WARN(
        "not under AddressSanitizer: the failed write's exception, thrown after SystemC has "
        "switched stacks, makes it report false stack errors (google/sanitizers#189)");
    return;
  }
  // stats.json is written through stats.json.tmp over the seconds it takes (OutputFile): a run
  // killed meanwhile leaves that file, which the next run in the directory removes as it
  // starts, whether or not it gets as far as writing stats.json itself (this one fails at
  // config.json, which it cannot replace: a directory with something in it is there).
  auto first = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=5"});
  REQUIRE(first.exit_code == 0);
  const fs::path dir(first.out_dir), tmp = dir / "stats.json.tmp";
  std::ofstream(tmp) << "{\"half";
  fs::remove(dir / "config.json");
  fs::create_directories(dir / "config.json" / "in_the_way");
  auto again = run_podsim(
      {"run", "--quiet", "--set", "workload.traffic.accesses=5", "--out", first.out_dir}, false);
  CHECK(again.exit_code == 1);
  CHECK_THAT(again.err, Catch::Contains("config.json") &&
                            Catch::Contains("none of the run's outputs were kept"));
  CHECK_FALSE(fs::exists(tmp));
  CHECK_FALSE(fs::exists(dir / "stats.json"));
}

TEST_CASE("a run's outputs never replace what it reads, and a refused run keeps the last run's",
          "[outputs]") {
  // A config saved as config.json (a run's, say), run with its folder as --out.
  const std::string config = podsim::test::write_temp_file(
      "config.json", R"({"pod": {"gpus": 4}, "workload": {"traffic": {"accesses": 20}}})");
  const fs::path base = fs::path(config).parent_path();
  const std::string text = podsim::test::slurp(config);
  // An extra file onto the config it runs.
  auto log = run_podsim({"run", config, "--quiet", "--access-log", config});
  CHECK(log.exit_code == 2);
  CHECK_THAT(log.err, Catch::Contains("--access-log " + config +
                                      " would overwrite the config "
                                      "file " +
                                      config));
  // The run's own config.json onto the config it runs (a run's config.json, run again there).
  auto same = run_podsim({"run", config, "--quiet", "--out", base.string()}, false);
  CHECK(same.exit_code == 2);
  CHECK_THAT(same.err, Catch::Contains("the run's config.json (in " + base.string() +
                                       ") would overwrite the config file " + config));
  CHECK(podsim::test::slurp(config) == text);
  // Refused for an extra file it cannot write: the last run's outputs stay, nothing is made.
  auto first = run_podsim({"run", config, "--quiet"});
  REQUIRE(first.exit_code == 0);
  auto refused = run_podsim({"run", config, "--quiet", "--out", first.out_dir, "--access-log",
                             "/nonexistent/dir/a.trace"},
                            false);
  CHECK(refused.exit_code == 2);
  CHECK(fs::exists(fs::path(first.out_dir) / "run.json"));
  const std::string fresh = (base / "never-made").string();
  CHECK(run_podsim(
            {"run", config, "--quiet", "--out", fresh, "--access-log", "/nonexistent/dir/a.trace"},
            false)
            .exit_code == 2);
  CHECK_FALSE(fs::exists(fresh));
  // An extra file in the output directory not made yet is fine: it is made.
  auto inside = run_podsim(
      {"run", config, "--quiet", "--out", fresh, "--access-log", fresh + "/a.trace"}, false);
  CHECK(inside.exit_code == 0);
  CHECK(fs::exists(fresh + "/a.trace"));
  // However the two are spelt, and in a parent the output directory's making makes too.
  const std::string b = base.string();
  for (const auto& [dir, file] :
       {std::pair{b + "/n1/", b + "/n1/a.trace"}, std::pair{b + "/./n2", b + "/n2/../n2/a.trace"},
        std::pair{b + "/p/q", b + "/p/a.trace"}}) {
    INFO(dir << " " << file);
    auto r = run_podsim({"run", config, "--quiet", "--out", dir, "--access-log", file}, false);
    CHECK(r.exit_code == 0);
    CHECK(fs::exists(file));
  }
}

TEST_CASE("a run stopped part way leaves no earlier run's access log beside its outputs",
          "[outputs]") {
  // The second run is killed at 1 s of CPU time (ulimit -t), long before it ends.
  const std::string log = podsim::test::write_temp_file("access.trace", "");
  auto first =
      run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=20", "--access-log", log});
  REQUIRE(first.exit_code == 0);
  REQUIRE(fs::file_size(log) > 0);
  auto killed = podsim::test::run_podsim_after(
      "ulimit -t 1; ",
      {"run", "--quiet", "--set", "workload.traffic.accesses=50000000", "--out", first.out_dir,
       "--access-log", log},
      false);
  CHECK(killed.exit_code != 0);
  CHECK_FALSE(fs::exists(log));
  CHECK_FALSE(fs::exists(fs::path(first.out_dir) / "run.json"));
}
