// podsim bench: the speed table, and the host-time and kernel figures a run reports.
#include <catch2/catch.hpp>

#include <gnu/libc-version.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string_view>
#include <vector>

#include "sim/core/sanitizers.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::run_podsim_after;
using podsim::test::slurp;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;
namespace json = boost::json;

namespace {
double num(const json::value& v) {
  return v.is_double()  ? v.as_double()
         : v.is_int64() ? static_cast<double>(v.as_int64())
                        : static_cast<double>(v.as_uint64());
}
}  // namespace

namespace {
// What this test's environment and build leave podsim free to do: the decisions themselves are
// tested in tests/unit/test_huge_pages.cpp.
bool free_to_restart() {
  const char* preload = std::getenv("LD_PRELOAD");
  const char* chosen = std::getenv("GLIBC_TUNABLES");
  return !PODSIM_ASAN && (!preload || !*preload) &&
         !(chosen && std::string_view(chosen).find("glibc.malloc.hugetlb") != std::string::npos);
}
// The kernel gives huge pages to memory that asks (and glibc can ask).
bool madvise_host() {
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  unsigned major = 0, minor = 0;
  std::sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor);
  return mode.find("[madvise]") != std::string::npos && (major > 2 || minor >= 35);
}
bool flag(const json::value& run, const char* key) {
  return run.at("host").at(key).as_bool();
}
}  // namespace

TEST_CASE("run.json says where the host time went and what the kernel did", "[bench]") {
  auto r = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=500"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.run);
  const json::object& host = r.run->at("host").as_object();
  const double total = num(r.run->at("host_seconds"));
  const double setup = num(host.at("setup_seconds")), access = num(host.at("access_seconds")),
               teardown = num(host.at("teardown_seconds"));
  CHECK(setup > 0);
  CHECK(access > 0);
  CHECK(teardown > 0);
  CHECK(setup + access + teardown <= total);
  CHECK(num(host.at("peak_rss_bytes")) > 1e6);
  CHECK(num(host.at("huge_page_bytes")) <= num(host.at("peak_rss_bytes")));
  CHECK(num(host.at("page_faults")) > 0);
  CHECK(host.at("huge_heap_asked").is_bool());
  CHECK(host.at("restarted_for_huge_heap").is_bool());
  // Every remote access is a round trip of at least 8 served items (translation, port,
  // switch, NPA MMU, VRAM, port, switch, completion), all of them in the access phase.
  const json::object& k = r.run->at("kernel").as_object();
  const double accesses = r.stat("pod.summary.remote_accesses");
  REQUIRE(accesses == 8 * 500);
  CHECK(num(k.at("access_phase_serves")) >= 8 * accesses);
  CHECK(num(k.at("access_phase_serves")) <= num(k.at("serves")));
  CHECK(num(k.at("access_phase_activations")) <= num(k.at("activations")));
  // Each of the 8 GPUs keeps workload.traffic.outstanding (16) accesses in flight, each in a
  // packet of its own.
  CHECK(num(k.at("packets_peak")) >= 8 * 16);
}

TEST_CASE("a run's peak RSS is its own, not that of the process that started it", "[bench]") {
  const std::vector<std::string> args{"run", "--quiet", "--set", "workload.traffic.accesses=50"};
  auto plain = run_podsim(args);
  REQUIRE(plain.exit_code == 0);
  // This process holds 512 MiB more, touched, while it starts the same run (as podsim bench
  // does after reading a big point's results). Linux counts the image a process replaced when
  // it started into getrusage's peak, and the shell that starts the run is a copy of this
  // process that replaces itself with podsim (`exec`): a run reporting getrusage's peak would
  // report this process's size.
  constexpr std::size_t kBig = std::size_t{512} << 20;
  std::vector<unsigned char> big(kBig, 1);
  auto after_big = podsim::test::run_podsim_after("exec ", args);
  asm volatile("" : : "r"(big.data()) : "memory");  // held, touched, until the run has ended
  REQUIRE(after_big.exit_code == 0);
  const double mine = num(plain.run->at("host").at("peak_rss_bytes"));
  const double theirs = num(after_big.run->at("host").at("peak_rss_bytes"));
  CHECK(mine > 1e6);
  CHECK(theirs < mine + 64.0 * (1 << 20));
}

TEST_CASE("podsim bench measures each pod size and load and writes its table", "[bench]") {
  const std::string out = (fs::path(write_temp_file("x", "")).parent_path() / "bench").string();
  auto r = run_podsim({"bench", "--gpus", "4,12", "--loads", "closed,poisson", "--accesses", "2400",
                       "--rounds", "2", "--no-shipped", "--quiet", "--out", out},
                      false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == slurp((fs::path(out) / "bench.md").string()));
  const json::value doc = json::parse(slurp((fs::path(out) / "bench.json").string()));
  const json::array& points = doc.at("points").as_array();
  REQUIRE(points.size() == 7);
  std::vector<std::string> names;
  std::map<std::string, double> packets;  // the most packets each point held at once
  for (const auto& p : points) {
    const json::object& o = p.as_object();
    names.emplace_back(o.at("point").as_string());
    CHECK(o.at("exit_code").as_int64() == 0);
    CHECK(num(o.at("remote_accesses")) == 2400);  // spread evenly over the initiating GPUs
    CHECK(num(o.at("remote_accesses_per_host_second")) > 0);
    CHECK(num(o.at("peak_rss_mib")) > 1);
    CHECK(num(o.at("serves_per_access")) >= 8);
    packets[std::string(o.at("point").as_string())] = num(o.at("packets_peak"));
    // Each point ran twice (its rounds' runs side by side); its host figures are the medians
    // of the two, so between them.
    const json::array& rounds = o.at("rounds").as_array();
    REQUIRE(rounds.size() == 2);
    const double a = num(rounds[0].at("access_phase_seconds"));
    const double b = num(rounds[1].at("access_phase_seconds"));
    CHECK(num(o.at("access_phase_seconds")) == Approx((a + b) / 2));
    CHECK(num(o.at("host_us_per_access")) == Approx((a + b) / 2 * 1e6 / 2400));
    for (const char* round : {"1", "2"}) {
      // Where podsim run would start itself again for huge pages, each point (a process bench
      // starts) is started with them asked for instead.
      const json::value run = json::parse(slurp(
          (fs::path(out) / "points" / std::string(o.at("point").as_string()) / round / "run.json")
              .string()));
      CHECK(flag(run, "huge_heap_asked") == (free_to_restart() && madvise_host()));
      CHECK_FALSE(flag(run, "restarted_for_huge_heap"));
    }
  }
  CHECK(r.out.find("host us per access (median of 2: least-most)") != std::string::npos);
  CHECK(names == std::vector<std::string>{"default-4gpu-closed", "default-12gpu-closed",
                                          "default-4gpu-poisson", "default-12gpu-poisson",
                                          "all-peers-4gpu", "all-peers-12gpu",
                                          "all-peers-12gpu-8-initiators"});
  // A closed loop holds its 32 outstanding accesses per GPU at once; Poisson injection at the
  // same rate per GPU holds more the more GPUs there are (what makes a big pod's packets leave
  // the host's caches).
  CHECK(packets["default-4gpu-closed"] >= 4 * 32);
  CHECK(packets["default-12gpu-closed"] >= 12 * 32);
  CHECK(packets["default-12gpu-poisson"] > packets["default-4gpu-poisson"]);
  // Each point's cost is compared with the smallest pod of its kind.
  CHECK(r.out.find("| all-peers-12gpu-8-initiators | 12 | closed |") != std::string::npos);
  // A bad argument is a usage error, before anything runs.
  CHECK(run_podsim({"bench", "--loads", "bursty"}, false).exit_code == 2);
  CHECK(run_podsim({"bench", "--gpus", "8,4096"}, false).exit_code == 2);
  CHECK(run_podsim({"bench", "--rounds", "0"}, false).exit_code == 2);
  CHECK(run_podsim({"bench", "--rounds", "101"}, false).exit_code == 2);
}

TEST_CASE("podsim bench stops a point at its first failed round and reports it, the others run",
          "[bench]") {
  // A "helios-72.json" that runs out of simulated time (sim.max_time) before its accesses end:
  // a run that starts and fails, where the bench's other point succeeds.
  const fs::path configs = fs::path(write_temp_file("helios-72.json", R"({"name": "helios-72",
    "pod": {"gpus": 4}, "sim": {"max_time": "100ns"}})"))
                               .parent_path();
  const std::string out = (configs / "bench-failing").string();
  // What an earlier bench into the same folder left is gone.
  fs::create_directories(fs::path(out) / "points" / "stale-point");
  auto r = run_podsim(
      {"bench", "--gpus", "4", "--loads", "closed", "--accesses", "800", "--no-all-peers",
       "--rounds", "3", "--configs", configs.string(), "--quiet", "--out", out},
      false);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  // The row says what the config ran (4 GPUs), not what the shipped helios-72 is; the folder
  // has no pod-1024.json, and the table says it was not measured.
  CHECK(r.out.find("| helios-72 | 4 | closed | failed (exit 1) in round 1 |") != std::string::npos);
  CHECK(r.out.find("Not measured: " + (configs / "pod-1024.json").string() + " (not found).") !=
        std::string::npos);
  const json::value doc = json::parse(slurp((fs::path(out) / "bench.json").string()));
  std::map<std::string, json::object> points;
  for (const auto& p : doc.at("points").as_array())
    points[std::string(p.at("point").as_string())] = p.as_object();
  REQUIRE(points.count("helios-72") == 1);
  REQUIRE(points.count("default-4gpu-closed") == 1);
  const json::object& failed = points["helios-72"];
  CHECK(failed.at("exit_code").as_int64() == 1);
  CHECK(failed.at("failure").as_string() == "failed (exit 1)");
  CHECK(num(failed.at("failed_round")) == 1);
  CHECK(failed.at("rounds").as_array().empty());
  CHECK_FALSE(fs::exists(fs::path(out) / "points" / "helios-72" / "2"));
  const json::object& ok = points["default-4gpu-closed"];
  CHECK(ok.at("exit_code").as_int64() == 0);
  CHECK_FALSE(ok.contains("failure"));
  CHECK(ok.at("rounds").as_array().size() == 3);
  CHECK_FALSE(fs::exists(fs::path(out) / "points" / "stale-point"));
}

TEST_CASE("podsim bench refuses what would make a row say other than what ran", "[bench]") {
  const fs::path dir = fs::path(write_temp_file("x", "")).parent_path();
  const std::string out = (dir / "bench").string();
  auto bench = [&](std::vector<std::string> args, const std::string& to) {
    std::vector<std::string> a = {"bench",      "--no-shipped", "--no-all-peers", "--rounds", "1",
                                  "--accesses", "80",           "--quiet",        "--out",    to};
    a.insert(a.end(), args.begin(), args.end());
    return run_podsim(a, false);
  };
  for (const auto& [args, says] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--gpus", "8,8"}, "--gpus gives 8 twice"},  // two rows, one folder
           {{"--loads", "closed,closed"}, "--loads gives closed twice"},
           {{"--gpus", ""}, "--gpus is empty"},
           {{"--gpus", "8,,16"}, "an empty item is not a pod size"},
           {{"--loads", "closed,,poisson"}, "'' is not a load"},
           {{"--set", "pod.gpus=16"}, "every point sets pod.gpus (choose with --gpus)"},
           {{"--set", "workload.traffic.injection=poisson"},
            "every point sets workload.traffic.injection (choose with --loads)"},
           {{"--set", R"(pod={"gpus": 16})"}, "every point sets pod.gpus"},  // its section
           {{"--set", R"(workload={"traffic": {"injection": "poisson"}})"},
            "every point sets workload.traffic.injection"},
       }) {
    INFO(args[0] << " " << args[1]);
    auto r = bench(args, out);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(says));
    CHECK_FALSE(fs::exists(out));
  }
  // A --configs folder that is not there, and an --out that is a file: usage errors.
  auto r = run_podsim({"bench", "--no-all-peers", "--gpus", "8", "--configs",
                       (dir / "nowhere").string(), "--out", out},
                      false);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("nowhere: not a folder"));
  const std::string file = write_temp_file("a-file", "");
  r = bench({"--gpus", "8"}, file);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("--out " + file + ": not a directory"));
  // A bench stopped before it writes its table leaves no earlier bench's table behind to be
  // read with its points.
  REQUIRE(bench({"--gpus", "4"}, out).exit_code == 0);
  REQUIRE(fs::exists(fs::path(out) / "bench.md"));
  r = run_podsim_after("timeout 3 ",
                       {"bench", "--no-shipped", "--no-all-peers", "--rounds", "1", "--gpus", "4",
                        "--accesses", "400000000", "--quiet", "--out", out},
                       false);
  CHECK(r.exit_code != 0);
  CHECK_FALSE(fs::exists(fs::path(out) / "bench.md"));
  CHECK_FALSE(fs::exists(fs::path(out) / "bench.json"));
}

TEST_CASE("a run puts its heap on huge pages, which changes no result and saves page faults",
          "[bench]") {
  // A 72-GPU pod: about 100 MB of state, built and touched for the first time.
  const std::vector<std::string> args{"run",   "--quiet",
                                      "--set", "pod.gpus=72",
                                      "--set", "fabric.switch.ports=128",
                                      "--set", "workload.setup=direct",
                                      "--set", "workload.traffic.accesses=50"};
  auto plain = run_podsim(args);
  // PODSIM_HUGE_PAGES=1 asks even where the kernel would not heed it: the restart is tried on
  // any host.
  auto asked = run_podsim_after("export PODSIM_HUGE_PAGES=1; ", args);
  auto off = run_podsim_after("export PODSIM_HUGE_PAGES=0; ", args);
  // A user's own choice of the tunable stands.
  auto chosen = run_podsim_after("export GLIBC_TUNABLES=glibc.malloc.hugetlb=0; ", args);
  // Started through the dynamic loader, /proc/self/exe is the loader: no restart.
  auto loader = run_podsim_after("export PODSIM_HUGE_PAGES=1; /lib64/ld-linux-x86-64.so.2 ", args);
  for (const auto* r : {&plain, &asked, &off, &chosen, &loader}) {
    INFO(r->err);
    REQUIRE(r->exit_code == 0);
    CHECK(slurp(r->out_dir + "/stats.json") == slurp(plain.out_dir + "/stats.json"));
  }
  CHECK(flag(*asked.run, "restarted_for_huge_heap") == free_to_restart());
  CHECK(flag(*asked.run, "huge_heap_asked") == free_to_restart());
  for (const auto* r : {&off, &chosen, &loader}) {
    CHECK_FALSE(flag(*r->run, "restarted_for_huge_heap"));
    CHECK_FALSE(flag(*r->run, "huge_heap_asked"));
  }
  CHECK(flag(*plain.run, "restarted_for_huge_heap") == (free_to_restart() && madvise_host()));
  if (!free_to_restart() || !madvise_host()) {
    WARN(
        "the kernel here does not give huge pages to memory that asks, or this build or "
        "environment says not to ask: page faults not compared");
    return;
  }
  // Each fresh 2 MiB of heap is one page fault instead of 512.
  const double faults_on = num(plain.run->at("host").at("page_faults")),
               faults_off = num(off.run->at("host").at("page_faults"));
  INFO("page faults: " << faults_on << " on huge pages, " << faults_off << " without");
  CHECK(faults_on * 2 < faults_off);
}
