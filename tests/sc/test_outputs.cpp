// What a run writes besides stats.json: latency tables by path, histograms, the breakdown.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/support/run_podsim.hpp"

using podsim::test::PodsimRun;
using podsim::test::run_podsim;
using podsim::test::source_path;
namespace fs = std::filesystem;

namespace {
using Row = std::map<std::string, std::string>;
std::vector<Row> read_csv(const fs::path& p) {
  std::ifstream in(p);
  std::vector<Row> rows;
  std::vector<std::string> head;
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');)
      cells.push_back(c);
    if (head.empty()) {
      head = cells;
      continue;
    }
    Row r;
    for (std::size_t i = 0; i < head.size() && i < cells.size(); ++i)
      r[head[i]] = cells[i];
    rows.push_back(r);
  }
  return rows;
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
