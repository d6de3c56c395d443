// podsim sweep: a grid of runs, one row per point, in grid order, the same every time.
#include <catch2/catch.hpp>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/tools/sweep.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::source_path;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;

namespace {
std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cells;
    std::istringstream l(line);
    for (std::string c; std::getline(l, c, ',');)
      cells.push_back(c);
    rows.push_back(cells);
  }
  return rows;
}
std::string fresh_dir(const char* name) {
  return (fs::path(write_temp_file("x", "")).parent_path() / name).string();
}
}  // namespace

TEST_CASE("sweep values split at top-level commas only", "[sweep]") {
  using podsim::tools::parse_vary;
  auto v = parse_vary("workload.initiators=[0,1],[2,3]");
  CHECK(v.key == "workload.initiators");
  CHECK(v.values == std::vector<std::string>{"[0,1]", "[2,3]"});
  CHECK(parse_vary("a.b=\"x,y\",z").values == std::vector<std::string>{"\"x,y\"", "z"});
  CHECK(parse_vary("fabric.switch.latency=100ns").values.size() == 1);
  CHECK_THROWS_WITH(parse_vary("novalues"), Catch::Contains("expected key.path=v1,v2"));
  CHECK_THROWS_WITH(parse_vary("a=1,,2"), Catch::Contains("an empty value"));
}

TEST_CASE("a sweep writes one row per point in grid order, identically at any -j", "[sweep]") {
  const std::string a = fresh_dir("sweep-a"), b = fresh_dir("sweep-b");
  auto sweep = [](const std::string& out, const char* jobs) {
    return run_podsim({"sweep", "--vary", "fabric.switch.latency=100ns,300ns", "--vary",
                       "workload.traffic.outstanding=1,8", "--set", "workload.traffic.accesses=100",
                       "--stat", "pod.gpu0.agent.remote_latency:max", "-j", jobs, "--out", out},
                      false);
  };
  auto r = sweep(a, "2");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto r1 = sweep(b, "1");
  REQUIRE(r1.exit_code == 0);
  CHECK(slurp(fs::path(a) / "sweep.csv") == slurp(fs::path(b) / "sweep.csv"));
  CHECK(slurp(fs::path(a) / "sweep.json") == slurp(fs::path(b) / "sweep.json"));

  const auto rows = csv_rows(slurp(fs::path(a) / "sweep.csv"));
  REQUIRE(rows.size() == 5);
  const auto& head = rows[0];
  CHECK(head[0] == "fabric.switch.latency");
  CHECK(head[1] == "workload.traffic.outstanding");
  CHECK(head[2] == "exit_code");
  CHECK(head[3] == "remote_accesses");
  CHECK(head[head.size() - 2] == "pod.gpu0.agent.remote_latency:max");
  CHECK(head.back() == "warnings");  // the point's warning codes, space-separated
  const std::vector<std::pair<std::string, std::string>> grid = {
      {"100ns", "1"}, {"100ns", "8"}, {"300ns", "1"}, {"300ns", "8"}};
  auto col = [&](const char* name) {
    return static_cast<std::size_t>(std::find(head.begin(), head.end(), name) - head.begin());
  };
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const auto& row = rows[i + 1];
    REQUIRE(row.size() == head.size());
    CHECK(row[0] == grid[i].first);
    CHECK(row[1] == grid[i].second);
    CHECK(row[2] == "0");
    CHECK(row[col("remote_accesses")] == "800");
    CHECK(fs::exists(fs::path(a) / "points" / ("00" + std::to_string(i)) / "stats.json"));
  }
  // Each point really ran its values: 200 ns more per switch crossing, twice per round trip.
  const double fast = std::stod(rows[1][col("remote_latency_mean_ns")]);
  const double slow = std::stod(rows[3][col("remote_latency_mean_ns")]);
  CHECK(slow - fast == Approx(400).margin(5));
  // More in flight, more bandwidth.
  CHECK(std::stod(rows[2][col("achieved_bandwidth_GBps")]) >
        4 * std::stod(rows[1][col("achieved_bandwidth_GBps")]));
}

TEST_CASE("a sweep checks every point's config first: exit 2, the point named, nothing run",
          "[sweep]") {
  const std::string out = fresh_dir("sweep-bad");
  auto r = run_podsim({"sweep", "--vary", "pod.gpus=4,5000", "--out", out}, false);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("point 1") && Catch::Contains("pod.gpus=5000") &&
                        Catch::Contains("at most 1024"));
  CHECK_FALSE(fs::exists(out));
  auto none = run_podsim({"sweep", "--out", out}, false);
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.err, Catch::Contains("nothing to vary"));
}

namespace {
// Every file under `dir`, by path relative to it, with its content.
std::map<std::string, std::string> tree(const fs::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) files[fs::relative(e.path(), dir).generic_string()] = slurp(e.path());
  return files;
}
// A run.json holds host times and memory ("host", "host_seconds"): the rest of it must match.
std::string without_host(const std::string& run_json) {
  auto v = boost::json::parse(run_json);
  auto& o = v.as_object();
  for (auto it = o.begin(); it != o.end();)
    it = it->key().starts_with("host") ? o.erase(it) : std::next(it);
  return boost::json::serialize(v);
}
}  // namespace

TEST_CASE("the same sweep under mpirun -n 2 and -n 3 writes what -j 2 writes", "[sweep][mpi]") {
  auto sweep = [](int ranks, const std::string& out) {
    const std::vector<std::string> args{"sweep",
                                        "--vary",
                                        "fabric.switch.latency=100ns,300ns",
                                        "--vary",
                                        "workload.traffic.outstanding=1,4,8",
                                        "--set",
                                        "workload.traffic.accesses=60",
                                        "--out",
                                        out};
    if (ranks == 1) {
      auto a = args;
      a.insert(a.end(), {"-j", "2"});
      return run_podsim(a, false);
    }
    return podsim::test::run_podsim_mpi(ranks, args, false);
  };
  const std::string one = fresh_dir("sweep-j2"), two = fresh_dir("sweep-mpi2"),
                    three = fresh_dir("sweep-mpi3");
  auto r1 = sweep(1, one);
  REQUIRE(r1.exit_code == 0);
  const auto want = tree(one);
  REQUIRE(want.count("sweep.csv") == 1);
  REQUIRE(want.count("points/005/stats.json") == 1);
  for (const auto& [ranks, dir] : {std::pair{2, two}, std::pair{3, three}}) {
    INFO(ranks << " ranks");
    auto r = sweep(ranks, dir);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    CHECK_THAT(r.out, Catch::Contains("6 points, 0 failed"));
    const auto got = tree(dir);
    std::vector<std::string> names, want_names;
    for (const auto& f : got)
      names.push_back(f.first);
    for (const auto& f : want)
      want_names.push_back(f.first);
    REQUIRE(names == want_names);
    for (const auto& [name, text] : want) {
      INFO(name);
      if (name.size() > 8 && name.substr(name.size() - 8) == "run.json")
        CHECK(without_host(got.at(name)) == without_host(text));
      else
        CHECK(got.at(name) == text);
    }
  }
}

TEST_CASE("under mpirun, a bad sweep is one error from rank 0, exit 2, and config is refused",
          "[sweep][mpi]") {
  const std::string out = fresh_dir("sweep-mpi-bad");
  auto r =
      podsim::test::run_podsim_mpi(2, {"sweep", "--vary", "pod.gpus=4,5000", "--out", out}, false);
  CHECK(r.exit_code != 0);
  CHECK_THAT(r.err, Catch::Contains("pod.gpus=5000"));
  // One rank speaks: the message once.
  const auto first = r.err.find("podsim sweep: config error");
  REQUIRE(first != std::string::npos);
  CHECK(r.err.find("podsim sweep: config error", first + 1) == std::string::npos);
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.csv"));
  // Commands that do the same work on every rank are refused.
  auto config = podsim::test::run_podsim_mpi(2, {"config"}, false);
  CHECK(config.exit_code == 2);
  CHECK_THAT(config.err, Catch::Contains("only `podsim run` (one pod split across the ranks) and "
                                         "`podsim sweep`"));
}

TEST_CASE("a sweep replaces what an earlier sweep left in its directory", "[sweep]") {
  const std::string out = fresh_dir("sweep-stale");
  fs::create_directories(fs::path(out) / "points" / "099");
  std::ofstream(fs::path(out) / "points" / "099" / "stats.json") << "{}";
  std::ofstream(fs::path(out) / "sweep.csv") << "stale\n";
  // A sweep that fails before writing its files leaves none of the old ones behind.
  auto bad = run_podsim({"sweep", "--vary", "workload.traffic.accesses=20", "--set",
                         "workload.traffic.outstanding=0", "--out", out},
                        false);
  CHECK(bad.exit_code == 2);  // a config error: nothing run, nothing touched
  CHECK(fs::exists(fs::path(out) / "sweep.csv"));
  auto r = run_podsim({"sweep", "--vary", "workload.traffic.accesses=20,30", "--out", out}, false);
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(fs::path(out) / "points" / "099"));
  CHECK(fs::exists(fs::path(out) / "points" / "001" / "stats.json"));
  CHECK(slurp(fs::path(out) / "sweep.csv") != "stale\n");
}

TEST_CASE("a sweep point with no accesses has no latencies, rather than 0 ns", "[sweep]") {
  const std::string out = fresh_dir("sweep-none");
  auto r = run_podsim({"sweep", "--vary", "workload.traffic.accesses=0,20", "--out", out}, false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = csv_rows(slurp(fs::path(out) / "sweep.csv"));
  REQUIRE(rows.size() == 3);
  const auto& head = rows[0];
  const auto mean = static_cast<std::size_t>(
      std::find(head.begin(), head.end(), "remote_latency_mean_ns") - head.begin());
  REQUIRE(mean < head.size());
  CHECK(rows[1][mean].empty());
  CHECK(std::stod(rows[2][mean]) > 0);
  CHECK_THAT(slurp(fs::path(out) / "sweep.md"), Catch::Contains("| 0 | - | - |"));
}

TEST_CASE("a failed sweep point's row in sweep.md says FAILED", "[sweep]") {
  // 3 ms of simulated time ends the 100,000-access point in its access phase (exit 1); the
  // 20-access point finishes (at 2.2 ms).
  const std::string out = fresh_dir("sweep-failed-point");
  auto r = run_podsim({"sweep", "--vary", "workload.traffic.accesses=20,100000", "--set",
                       "sim.max_time=3ms", "--out", out},
                      false);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.out, Catch::Contains("2 points, 1 failed"));
  const std::string md = slurp(fs::path(out) / "sweep.md");
  // (The 20-access point's warnings, a window too short and too few accesses, come last.)
  CHECK_THAT(md, Catch::Contains("| achieved_bandwidth_GBps | result | warnings |\n"
                                 "|---|---|---|---|---|---|\n") &&
                     Catch::Contains(" | FAILED (exit 1) | - |\n") &&
                     Catch::Contains("1 point(s) FAILED"));
  CHECK_THAT(md, Catch::Matches("(.|\n)*\\| 20 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| ok \\| "
                                "window_too_short, too_few_accesses \\|\n(.|\n)*"));
  CHECK_THAT(md, Catch::Matches("(.|\n)*\\| 100000 \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| FAILED "
                                "\\(exit 1\\) \\| - \\|\n(.|\n)*"));
  // A sweep where every point finished has no result column.
  const std::string ok = fresh_dir("sweep-all-ok");
  REQUIRE(run_podsim({"sweep", "--vary", "workload.traffic.accesses=20", "--out", ok}, false)
              .exit_code == 0);
  CHECK_THAT(slurp(fs::path(ok) / "sweep.md"),
             !Catch::Contains("result") && !Catch::Contains("FAILED"));
  // sweep.csv keeps the failed point's numbers beside its exit code.
  const auto rows = csv_rows(slurp(fs::path(out) / "sweep.csv"));
  REQUIRE(rows.size() == 3);
  CHECK(rows[2][0] == "100000");
  CHECK(rows[2][1] == "1");
  const auto mean = static_cast<std::size_t>(
      std::find(rows[0].begin(), rows[0].end(), "remote_latency_mean_ns") - rows[0].begin());
  REQUIRE(mean < rows[0].size());
  CHECK_FALSE(rows[2][mean].empty());
}

TEST_CASE("a --stat that no point has is an error naming it, with the nearest stats: exit 2",
          "[sweep]") {
  const std::string out = fresh_dir("sweep-bad-stat");
  auto typo = run_podsim({"sweep", "--vary", "workload.traffic.accesses=10", "--stat",
                          "pod.summary.remote_latncy", "--out", out},
                         false);
  CHECK(typo.exit_code == 2);
  CHECK_THAT(typo.err, Catch::Contains("--stat pod.summary.remote_latncy: no point's stats.json "
                                       "has a stat pod.summary.remote_latncy; did you mean "
                                       "pod.summary.remote_latency"));
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.csv"));
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.md"));
  auto field = run_podsim({"sweep", "--vary", "workload.traffic.accesses=10", "--stat",
                           "pod.summary.remote_latency:p77", "--out", out},
                          false);
  CHECK(field.exit_code == 2);
  CHECK_THAT(field.err,
             Catch::Contains("pod.summary.remote_latency has no field 'p77' (it has: ") &&
                 Catch::Contains("p99"));
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.csv"));
  // A stat that exists, even empty in every point, is a column.
  auto good = run_podsim(
      {"sweep", "--vary", "workload.traffic.accesses=10", "--stat", "pod.summary.revoke_time:mean",
       "--stat", "pod.gpu0.agent.remote_faults", "--out", out},
      false);
  CHECK(good.exit_code == 0);
  CHECK(fs::exists(fs::path(out) / "sweep.csv"));
}

TEST_CASE("a setting varied twice, or both varied and set, is an error naming both: exit 2",
          "[sweep]") {
  const std::string out = fresh_dir("sweep-twice");
  auto twice =
      run_podsim({"sweep", "--vary", "pod.gpus=2", "--vary", "pod.gpus=4", "--out", out}, false);
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err,
             Catch::Contains("--vary pod.gpus and --vary pod.gpus: the same setting varied twice"));
  auto inside = run_podsim(
      {"sweep", "--vary", "pod={\"gpus\": 2}", "--vary", "pod.gpus=4", "--out", out}, false);
  CHECK(inside.exit_code == 2);
  auto both =
      run_podsim({"sweep", "--set", "pod.gpus=2", "--vary", "pod.gpus=4,8", "--out", out}, false);
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("--set pod.gpus and --vary pod.gpus"));
  CHECK_FALSE(fs::exists(fs::path(out) / "sweep.csv"));
}

TEST_CASE("a sweep can vary the config file itself", "[sweep]") {
  const std::string out = fresh_dir("sweep-configs");
  const std::string a = source_path("configs/default.json");
  const std::string b = source_path("configs/study-load.json");
  auto r = run_podsim({"sweep", "--quiet", "--vary", "config=" + a + "," + b, "--set",
                       "workload.traffic.accesses=300", "-j", "2", "--out", out},
                      false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // Each point ran its own file (study-load's loads are all 256 B reads, the default's not).
  const std::string md = slurp(fs::path(out) / "sweep.md");
  CHECK_THAT(md, Catch::Contains("| config |") && Catch::Contains("| " + a + " |") &&
                     Catch::Contains("| " + b + " |"));
  CHECK_THAT(slurp(fs::path(out) / "points" / "000" / "run.json"), Catch::Contains(a));
  CHECK_THAT(slurp(fs::path(out) / "points" / "001" / "run.json"), Catch::Contains(b));
  // A config file and --vary config at once, or a file that is not there: exit 2, said.
  auto both = run_podsim({"sweep", a, "--vary", "config=" + a + "," + b, "--out", out}, false);
  CHECK(both.exit_code == 2);
  CHECK_THAT(both.err, Catch::Contains("give the configs one way"));
  auto missing =
      run_podsim({"sweep", "--vary", "config=" + a + ",/no/such.json", "--out", out}, false);
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("point 1 (config=/no/such.json") &&
                              Catch::Contains("cannot open the file"));
}

TEST_CASE("a sweep lists each point's warnings, and --warnings-as-errors fails those points",
          "[sweep]") {
  const std::string out = fresh_dir("sweep-warnings");
  auto r = run_podsim({"sweep", "--quiet", "--vary", "workload.traffic.accesses=20,2000",
                       "--warnings-as-errors", "-j", "2", "--out", out},
                      false);
  CHECK(r.exit_code == 1);  // a point failed: the one with warnings
  const auto rows = csv_rows(slurp(fs::path(out) / "sweep.csv"));
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].back() == "warnings");
  CHECK(rows[1][1] == "3");  // exit code 3: warnings are errors
  CHECK(rows[1].back() == "window_too_short too_few_accesses");
  CHECK(rows[2][1] == "0");
  {  // no warnings: an empty last cell (the line ends with the comma before it)
    const std::string csv = slurp(fs::path(out) / "sweep.csv");
    const auto at = csv.find("\n2000,0,");
    REQUIRE(at != std::string::npos);
    CHECK(csv[csv.find('\n', at + 1) - 1] == ',');
  }
  const std::string md = slurp(fs::path(out) / "sweep.md");
  CHECK_THAT(md, Catch::Contains("FAILED (exit 3) | window_too_short, too_few_accesses |"));
  // The sweep's report names the point and its warnings.
  auto rep = run_podsim({"report", out}, false);
  REQUIRE(rep.exit_code == 0);
  CHECK_THAT(slurp(fs::path(out) / "report.html"),
             Catch::Contains("Points with warnings") &&
                 Catch::Contains("point 000 (accesses=20): window_too_short, too_few_accesses"));
}

TEST_CASE("under mpirun, ranks given different grids are refused before anything runs",
          "[sweep][mpi]") {
  const std::string out =
      (std::filesystem::path(podsim::test::write_temp_file("x", "")).parent_path() / "sweep")
          .string();
  auto sweep = [&](const char* values) {
    return std::vector<std::string>{"sweep",  "--quiet",
                                    "--vary", std::string("workload.traffic.accesses=") + values,
                                    "--out",  out};
  };
  const auto r = podsim::test::run_podsim_mpi_apart(sweep("5,6"), sweep("5,7"));
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("rank 1 of 2 (at least) would sweep another grid"));
  CHECK_FALSE(std::filesystem::exists(out));
  // A rank whose grid has a bad point ends every rank, rather than leaving rank 0 waiting.
  const auto bad = podsim::test::run_podsim_mpi_apart(sweep("5"), sweep("-1"));
  CHECK(bad.exit_code == 2);
  CHECK_THAT(bad.err, Catch::Contains("rank 1 of 2 refused the sweep where rank 0 did not") &&
                          Catch::Contains("saying: podsim sweep: config error at point 0"));
  CHECK_FALSE(std::filesystem::exists(out));
  // A rank that cannot make its scratch directory (its TMPDIR a file) refuses the sweep too,
  // saying why, before any point runs.
  const std::string file = podsim::test::write_temp_file("not-a-dir", "");
  const auto tmp = podsim::test::run_podsim_mpi_apart(sweep("5,6"), sweep("5,6"), "TMPDIR=" + file);
  CHECK(tmp.exit_code == 2);
  CHECK_THAT(tmp.err, Catch::Contains("rank 1 of 2 refused the sweep where rank 0 did not") &&
                          Catch::Contains("cannot make this rank's scratch directory in the "
                                          "temporary directory (TMPDIR=" +
                                          file + "): Not a directory"));
  CHECK_FALSE(std::filesystem::exists(out));
}

TEST_CASE("a sweep point killed by a signal says so", "[sweep]") {
  // With 2 s of CPU time a process (ulimit -t), the long point is killed (SIGKILL at the
  // limit); the short one and the sweep itself (which waits) are not.
  const std::string out =
      (std::filesystem::path(podsim::test::write_temp_file("x", "")).parent_path() / "sweep")
          .string();
  const auto r = podsim::test::run_podsim_after(
      "ulimit -t 2; ", {"sweep", "--vary", "workload.traffic.accesses=5,400000000", "--out", out},
      false);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK_THAT(r.err, Catch::Matches("(.|\n)*point 001 \\(400000000\\) "
                                   "killed by signal [0-9]+\n(.|\n)*"));
  const boost::json::value doc = boost::json::parse(podsim::test::slurp(out + "/sweep.json"));
  const auto& rows = doc.at("points").as_array();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("exit_code").as_int64() == 0);
  CHECK_FALSE(rows[0].as_object().contains("signal"));
  CHECK(rows[1].at("exit_code").as_int64() == -1);
  REQUIRE(rows[1].as_object().contains("signal"));
  const auto signal = rows[1].at("signal").as_int64();
  CHECK(signal > 0);
  CHECK_THAT(podsim::test::slurp(out + "/sweep.md"),
             Catch::Contains("| FAILED (killed by signal " + std::to_string(signal) + ") |"));
}

TEST_CASE("a sweep refuses what would misstate its points or its folder, before any runs",
          "[sweep]") {
  // --seed fixes the key `seed` at every point: varied too, the rows would name seeds no point
  // ran with.
  const std::string out = fresh_dir("sweep-refusals");
  auto seed = run_podsim({"sweep", "--quiet", "--seed", "5", "--vary", "seed=1,2", "--set",
                          "workload.traffic.accesses=20", "--out", out},
                         false);
  CHECK(seed.exit_code == 2);
  CHECK_THAT(seed.err, Catch::Contains("--seed and --vary seed: the same setting both fixed and "
                                       "varied"));
  // An empty --out would be the current directory (its points/ replaced), a file no folder.
  auto empty = run_podsim({"sweep", "--quiet", "--vary", "pod.gpus=2,3", "--out", ""}, false);
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.err, Catch::Contains("--out \"\": an empty name"));
  const std::string file = podsim::test::write_temp_file("a-file", "x");
  auto onto = run_podsim({"sweep", "--quiet", "--vary", "pod.gpus=2,3", "--out", file}, false);
  CHECK(onto.exit_code == 2);
  CHECK_THAT(onto.err, Catch::Contains("--out " + file + ": is not a directory"));
  // A value or a --stat given twice: two rows of one point, two equal columns.
  auto twice = run_podsim({"sweep", "--quiet", "--vary", "pod.gpus=2,3,2", "--out", out}, false);
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Catch::Contains("--vary pod.gpus: the value 2 is given twice"));
  auto stat = run_podsim({"sweep", "--quiet", "--vary", "pod.gpus=2,3", "--stat",
                          "pod.summary.retries", "--stat", "pod.summary.retries", "--out", out},
                         false);
  CHECK(stat.exit_code == 2);
  CHECK_THAT(stat.err, Catch::Contains("--stat pod.summary.retries is given twice"));
  // A point's trace is checked as `podsim run` checks it, before any point runs.
  const std::string good = podsim::test::write_temp_file("good.trace", "0 0 R 0x100000000000 64\n");
  const std::string bad = podsim::test::write_temp_file("bad.trace", "0 0 Q 0 64\n");
  auto trace = run_podsim(
      {"sweep", "--quiet", "--vary", "workload.traffic.trace=" + good + "," + bad, "--out", out},
      false);
  CHECK(trace.exit_code == 2);
  CHECK_THAT(trace.err,
             Catch::Contains("at point 1") &&
                 Catch::Contains("trace error: " + bad + ":1: op \"Q\" is not R, W or A"));
  CHECK_FALSE(fs::exists(out));
}
