// Access traces end to end: a run records what it issued (--access-log); replaying that
// trace reproduces the run exactly; a bad trace is a line-numbered error with nothing written.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/pod/trace.hpp"
#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::write_temp_file;

namespace {
std::size_t data_lines(const std::string& text) {
  std::size_t n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    n += !line.empty() && line[0] != '#';
  return n;
}
}  // namespace

TEST_CASE("replaying a recorded access log reproduces the generated run exactly", "[trace]") {
  // 192 B accesses too: they go 256 B apart, so none crosses a 256-byte block or a page (the
  // MMUs translate an access's first byte), and the log passes the trace's own checks.
  for (const char* size : {"64B", "192B"}) {
    INFO(size);
    const std::vector<std::string> mix = {
        "--set", "workload.traffic.pattern=hotspot",
        "--set", "workload.traffic.local_fraction=0.2",
        "--set", "workload.traffic.atomic_fraction=0.1",
        "--set", "workload.traffic.accesses=1500",
        "--set", std::string("workload.traffic.access_size=") + size};
    const std::string log = write_temp_file("run.trace", "");
    std::vector<std::string> gen_args = {"run", "--quiet", "--access-log", log};
    gen_args.insert(gen_args.end(), mix.begin(), mix.end());
    auto gen = run_podsim(gen_args);
    REQUIRE(gen.exit_code == 0);
    const std::string trace = slurp(log);
    CHECK(data_lines(trace) == 8 * 1500);
    CHECK(gen.stat("pod.summary.remote_accesses") > 0);
    std::size_t crossing = 0;
    for (const auto& e : podsim::parse_trace(trace, log, 8))
      crossing += e.va % 256 + e.size > 256;
    CHECK(crossing == 0);

    // The trace replaces the generated pattern: the same accesses at the same times.
    auto rep =
        run_podsim({"run", "--quiet", "--set", std::string("workload.traffic.access_size=") + size,
                    "--set", "workload.traffic.trace=" + log});
    REQUIRE(rep.exit_code == 0);
    INFO(rep.err);
    CHECK(boost::json::serialize(rep.stats->at("stats")) ==
          boost::json::serialize(gen.stats->at("stats")));
  }
}

TEST_CASE("a malformed trace is an error naming file and line, and nothing is written", "[trace]") {
  const std::string bad = write_temp_file("bad.trace",
                                          "# t gpu op va size\n0 0 R 0x1000 64\n"
                                          "1 0 Q 0x1000 64\n");
  auto r = run_podsim({"run", "--set", "workload.traffic.trace=" + bad});
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains(bad + ":3: op \"Q\" is not R, W or A"));
  CHECK(r.out.empty());
  CHECK_FALSE(r.out_dir_exists);

  auto gpu =
      run_podsim({"run", "--set",
                  "workload.traffic.trace=" + write_temp_file("g.trace", "0 8 R 0x1000 64\n")});
  CHECK(gpu.exit_code == 2);
  CHECK_THAT(gpu.err, Catch::Contains("g.trace:1: GPU \"8\" is not a GPU of the pod (0 to 7)"));

  auto missing = run_podsim({"run", "--set", "workload.traffic.trace=/nonexistent/t.trace"});
  CHECK(missing.exit_code == 2);
  CHECK_THAT(missing.err, Catch::Contains("/nonexistent/t.trace: cannot open"));
}

TEST_CASE("a trace path in a config file is relative to that file", "[trace]") {
  // Each GPU loads its own first imported page's first line: GPU g reads GPU (g+1)%8's buffer.
  const std::string log = write_temp_file("probe.trace", "");
  auto gen =
      run_podsim({"run", "--quiet", "--access-log", log, "--set", "workload.traffic.accesses=3"});
  REQUIRE(gen.exit_code == 0);
  const std::string cfg =
      write_temp_file("pod.json", R"({"workload": {"traffic": {"trace": "probe.trace"}}})");
  std::filesystem::copy_file(log, std::filesystem::path(cfg).parent_path() / "probe.trace");
  auto rep = run_podsim({"run", "--quiet", cfg});
  REQUIRE(rep.exit_code == 0);
  CHECK(rep.stat("pod.summary.remote_accesses") == gen.stat("pod.summary.remote_accesses"));
  CHECK(rep.stat("pod.summary.remote_accesses") == 8 * 3);
}

TEST_CASE("a trace path given with --set is relative to the current directory, config or not",
          "[trace]") {
  const std::string log = write_temp_file("here.trace", "");
  auto gen =
      run_podsim({"run", "--quiet", "--access-log", log, "--set", "workload.traffic.accesses=2"});
  REQUIRE(gen.exit_code == 0);
  const std::string dir = std::filesystem::path(log).parent_path().string();
  // A config file elsewhere (the source tree's) and the trace named from the current directory.
  auto rep = podsim::test::run_podsim_after(
      "cd '" + dir + "' && ", {"run", "--quiet", podsim::test::source_path("configs/default.json"),
                               "--set", "workload.traffic.trace=here.trace"});
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  CHECK(rep.stat("pod.summary.remote_accesses") == 8 * 2);
}

TEST_CASE(
    "a trace replaces generated traffic entirely: an empty trace or a directory is an error, "
    "and a GPU absent from the trace issues nothing",
    "[trace]") {
  for (const std::string& t :
       {write_temp_file("empty.trace", "# only a comment\n\n"), write_temp_file("zero.trace", ""),
        std::filesystem::path(write_temp_file("x", "")).parent_path().string()}) {
    INFO(t);
    auto r = run_podsim({"run", "--set", "workload.traffic.trace=" + t});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("trace error: " + t + ": ") &&
                          (Catch::Contains("no accesses") || Catch::Contains("is a directory")));
    CHECK_FALSE(r.out_dir_exists);
  }
  // GPU 0 stores twice, nobody else does anything.
  const std::string gen = write_temp_file("g0.trace", "");
  auto recorded =
      run_podsim({"run", "--set", "workload.traffic.accesses=2", "--access-log", gen + ".full"});
  REQUIRE(recorded.exit_code == 0);
  std::istringstream in(slurp(gen + ".full"));
  std::string g0;
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#' && line.find(" 0 ") != std::string::npos &&
        line.find(' ') == line.find(" 0 "))
      g0 += line + "\n";
  REQUIRE(data_lines(g0) == 2);
  const std::string only0 = write_temp_file("only0.trace", g0);
  auto r = run_podsim({"run", "--set", "workload.traffic.trace=" + only0});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.remote_accesses") + r.stat("pod.gpu0.agent.local_accesses") == 2);
  for (int g = 1; g < 8; ++g) {
    INFO("gpu" << g);
    CHECK(r.stat("pod.gpu" + std::to_string(g) + ".agent.remote_reads") +
              r.stat("pod.gpu" + std::to_string(g) + ".agent.remote_writes") ==
          0);
  }
}
