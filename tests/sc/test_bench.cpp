// podsim bench: the speed table, and the host-time and kernel figures a run reports.
#include <catch2/catch.hpp>

#include <gnu/libc-version.h>

#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string_view>

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
// Whether `podsim run` should start itself again with its heap on huge pages here: the
// kernel gives them only where asked, glibc has the tunable, and neither the build
// (AddressSanitizer) nor this test's environment says otherwise.
bool huge_heap_expected() {
  if (PODSIM_ASAN) return false;
  auto has = [](const char* var, std::string_view part) {
    const char* v = std::getenv(var);
    return v && std::string_view(v).find(part) != std::string_view::npos;
  };
  if (has("PODSIM_HUGE_PAGES", "0") || has("GLIBC_TUNABLES", "glibc.malloc.hugetlb") ||
      has("LD_PRELOAD", "vgpreload") || std::getenv("PODSIM_RESTARTED"))
    return false;
  std::ifstream thp("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(thp, mode);
  unsigned major = 0, minor = 0;
  std::sscanf(gnu_get_libc_version(), "%u.%u", &major, &minor);
  return mode.find("[madvise]") != std::string::npos && (major > 2 || minor >= 35);
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
  CHECK(host.at("heap_on_huge_pages").is_bool());
  // Every remote access is a round trip of at least 8 served items (translation, port,
  // switch, NPA MMU, VRAM, port, switch, completion), all of them in the access phase.
  const json::object& k = r.run->at("kernel").as_object();
  const double accesses = r.stat("pod.summary.remote_accesses");
  REQUIRE(accesses == 8 * 500);
  CHECK(num(k.at("access_phase_serves")) >= 8 * accesses);
  CHECK(num(k.at("access_phase_serves")) <= num(k.at("serves")));
  CHECK(num(k.at("access_phase_activations")) <= num(k.at("activations")));
}

TEST_CASE("podsim bench measures each pod size and load and writes its table", "[bench]") {
  const std::string out = (fs::path(write_temp_file("x", "")).parent_path() / "bench").string();
  auto r = run_podsim({"bench", "--gpus", "4,12", "--loads", "closed,poisson", "--accesses", "2400",
                       "--no-shipped", "--quiet", "--out", out},
                      false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == slurp((fs::path(out) / "bench.md").string()));
  const json::value doc = json::parse(slurp((fs::path(out) / "bench.json").string()));
  const json::array& points = doc.at("points").as_array();
  REQUIRE(points.size() == 7);
  std::vector<std::string> names;
  for (const auto& p : points) {
    const json::object& o = p.as_object();
    names.emplace_back(o.at("point").as_string());
    CHECK(o.at("exit_code").as_int64() == 0);
    CHECK(num(o.at("remote_accesses")) == 2400);  // spread evenly over the initiating GPUs
    CHECK(num(o.at("remote_accesses_per_host_second")) > 0);
    CHECK(num(o.at("peak_rss_mib")) > 1);
    CHECK(num(o.at("serves_per_access")) >= 8);
    // Each point, a process bench starts, has its heap on huge pages from its start.
    const json::value run = json::parse(slurp(
        (fs::path(out) / "points" / std::string(o.at("point").as_string()) / "run.json").string()));
    CHECK(run.at("host").at("heap_on_huge_pages").as_bool() == huge_heap_expected());
  }
  CHECK(names == std::vector<std::string>{"default-4gpu-closed", "default-12gpu-closed",
                                          "default-4gpu-poisson", "default-12gpu-poisson",
                                          "all-peers-4gpu", "all-peers-12gpu",
                                          "all-peers-12gpu-8-initiators"});
  // Each point's cost is compared with the smallest pod of its kind.
  CHECK(r.out.find("| all-peers-12gpu-8-initiators | 12 | closed |") != std::string::npos);
  // A bad argument is a usage error, before anything runs.
  CHECK(run_podsim({"bench", "--loads", "bursty"}, false).exit_code == 2);
  CHECK(run_podsim({"bench", "--gpus", "8,4096"}, false).exit_code == 2);
}

TEST_CASE("a run puts its heap on huge pages, which changes no result and saves page faults",
          "[bench]") {
  // A 72-GPU pod: about 100 MB of state, built and touched for the first time.
  const std::vector<std::string> args{"run",   "--quiet",
                                      "--set", "pod.gpus=72",
                                      "--set", "fabric.switch.ports=128",
                                      "--set", "workload.setup=direct",
                                      "--set", "workload.traffic.accesses=50"};
  auto on = run_podsim(args);
  auto off = run_podsim_after("export PODSIM_HUGE_PAGES=0; ", args);
  // A user's own choice of the tunable stands.
  auto chosen = run_podsim_after("export GLIBC_TUNABLES=glibc.malloc.hugetlb=0; ", args);
  INFO(on.err << off.err << chosen.err);
  REQUIRE(on.exit_code == 0);
  REQUIRE(off.exit_code == 0);
  REQUIRE(chosen.exit_code == 0);
  CHECK(slurp(on.out_dir + "/stats.json") == slurp(off.out_dir + "/stats.json"));
  CHECK(slurp(on.out_dir + "/stats.json") == slurp(chosen.out_dir + "/stats.json"));
  const json::object& h_on = on.run->at("host").as_object();
  const json::object& h_off = off.run->at("host").as_object();
  CHECK_FALSE(h_off.at("heap_on_huge_pages").as_bool());
  CHECK_FALSE(chosen.run->at("host").at("heap_on_huge_pages").as_bool());
  if (!huge_heap_expected()) {
    WARN(
        "this host gives huge pages only unasked or never (or the build or the environment "
        "says not to): the run must keep its heap as it was");
    CHECK_FALSE(h_on.at("heap_on_huge_pages").as_bool());
    return;
  }
  CHECK(h_on.at("heap_on_huge_pages").as_bool());
  // Each fresh 2 MiB of heap is one page fault instead of 512.
  const double faults_on = num(h_on.at("page_faults")), faults_off = num(h_off.at("page_faults"));
  INFO("page faults: " << faults_on << " on huge pages, " << faults_off << " without");
  CHECK(faults_on * 2 < faults_off);
}
