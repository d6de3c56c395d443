// Collectives over load/store (workload.kind collective), end to end through the podsim
// binary: every op and algorithm ends with the right data in every participant's VRAM, the
// outputs say what a collective benchmark says, and bad configs are refused.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include "tests/support/run_podsim.hpp"

using podsim::test::read_csv;
using podsim::test::run_podsim;
using podsim::test::run_podsim_mpi;

namespace {

std::vector<std::string> collective(const std::string& op, const std::string& alg,
                                    std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"run",   "--quiet",
                                   "--set", "workload.kind=collective",
                                   "--set", "workload.collective.op=" + op,
                                   "--set", "workload.collective.algorithm=" + alg,
                                   "--set", "workload.collective.iterations=2"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("every collective and algorithm leaves every participant with the right data",
          "[collective]") {
  const std::pair<const char*, const char*> cases[] = {
      {"all_reduce", "ring"},         {"all_reduce", "one_shot"},   {"all_reduce", "two_shot"},
      {"all_gather", "ring"},         {"all_gather", "one_shot"},   {"reduce_scatter", "ring"},
      {"reduce_scatter", "one_shot"}, {"all_to_all", "one_shot"},   {"broadcast", "ring"},
      {"broadcast", "one_shot"},      {"all_to_all_v", "one_shot"},
  };
  for (const auto& [op, alg] : cases) {
    INFO(op << " " << alg);
    // Five of the pod's eight GPUs, out of order; sizes that split evenly among them and one
    // that does not (all_to_all: multiples of 64 B x 5), over the protocol's setup.
    const bool a2a = std::string(op) == "all_to_all", a2av = std::string(op) == "all_to_all_v";
    // all_to_all_v: 5 x 5 blocks, participant 1 (GPU 1) receiving most, one empty.
    std::string blocks;
    std::uint64_t total = 0;
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        const int b = j == 1 ? 64 * (100 + i) : i == j ? 0 : 64 * (3 * i + j + 1);
        blocks += fmt::format("{}\"{}B\"", blocks.empty() ? "" : ",", b);
        total += static_cast<std::uint64_t>(b);
      }
    const auto r = run_podsim(
        collective(op, alg,
                   {"--set", "workload.collective.gpus=[6,1,3,0,5]", "--set",
                    std::string(op) == "broadcast" ? "workload.collective.root=3" : "seed=1",
                    "--set", "workload.collective.chunk_size=512B", "--set",
                    a2av  ? "workload.collective.send_bytes=[" + blocks + "]"
                    : a2a ? R"(workload.collective.sizes=["320B","64000B"])"
                          : R"(workload.collective.sizes=["320B","64448B"])"}));
    REQUIRE(r.exit_code == 0);
    const auto rows = read_csv(r.out_dir + "/collectives.csv");
    REQUIRE(rows.size() == (a2av ? 1u : 2u));
    for (const auto& row : rows) {
      CHECK(row.at("op") == op);
      CHECK(row.at("algorithm") == alg);
      CHECK(row.at("participants") == "5");
      CHECK(row.at("calls") == "2");
      CHECK(row.at("wrong") == "0");
      // Every element of every participant's output was compared.
      const std::uint64_t bytes = std::stoull(row.at("bytes"));
      // all_to_all_v: what everyone receives is what everyone sends (bytes is its mean).
      const std::uint64_t out = a2av                                  ? total
                                : std::string(op) == "reduce_scatter" ? bytes
                                                                      : 5 * bytes;
      CHECK(std::stoull(row.at("elements_checked")) == out / 4);
      CHECK(std::stod(row.at("time_us")) > 0);
      CHECK(std::stod(row.at("busbw_GBps")) > 0);
    }
    // Exported windows were given back at the end (the teardown's checks held).
    CHECK(r.stats->at("ok").as_bool());
  }
}

TEST_CASE("a collective's outputs: the table, collectives.json, and the GPUs that do not take part",
          "[collective]") {
  const auto r = run_podsim(
      {"run", "--set", "workload.kind=collective", "--set", "workload.collective.gpus=[2,5]",
       "--set", R"(workload.collective.sizes=["4KiB","64KiB"])", "--set", "workload.setup=direct"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("all_reduce ring over 2 GPUs") != std::string::npos);
  CHECK(r.out.find("busbw GB/s") != std::string::npos);
  const auto doc = boost::json::parse(podsim::test::slurp(r.out_dir + "/collectives.json"));
  CHECK(doc.at("op").as_string() == "all_reduce");
  CHECK(doc.at("gpus").as_array().size() == 2);
  const auto& sizes = doc.at("sizes").as_array();
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[1].at("bytes").to_number<std::uint64_t>() == 65536);
  CHECK(sizes[1].at("wrong").to_number<std::uint64_t>() == 0);
  // Bus bandwidth is algorithm bandwidth x 2(n-1)/n for all_reduce.
  CHECK(sizes[1].at("busbw_GBps").to_number<double>() ==
        Approx(sizes[1].at("algbw_GBps").to_number<double>()));
  // GPUs 0 and 1 did not take part: no accesses.
  CHECK(r.stat("pod.gpu0.agent.remote_writes") == 0);
  CHECK(r.stat("pod.gpu2.agent.remote_writes") > 0);
}

TEST_CASE("what a collective runs when a key is left out", "[collective]") {
  // all_to_all: one_shot (ring is not one of its algorithms); broadcast: from the first
  // participant.
  const auto a2a = run_podsim({"run", "--quiet", "--set", "workload.kind=collective", "--set",
                               "workload.collective.op=all_to_all", "--set",
                               R"(workload.collective.sizes=["4KiB"])"});
  REQUIRE(a2a.exit_code == 0);
  CHECK(read_csv(a2a.out_dir + "/collectives.csv").at(0).at("algorithm") == "one_shot");
  const auto bc =
      run_podsim({"run", "--quiet", "--set", "workload.kind=collective", "--set",
                  "workload.collective.op=broadcast", "--set", "workload.collective.gpus=[5,2]",
                  "--set", R"(workload.collective.sizes=["4KiB"])"});
  REQUIRE(bc.exit_code == 0);
  CHECK(read_csv(bc.out_dir + "/collectives.csv").at(0).at("wrong") == "0");
  // GPU 5, the root, stored the data into GPU 2 (a ring, by default); GPU 2 stored only flags.
  CHECK(bc.stat("pod.gpu5.agent.remote_bytes") >= 3 * 4096);
  CHECK(bc.stat("pod.gpu2.agent.remote_bytes") < 4096);
}

TEST_CASE("functional data off: the same times, flags still work, nothing checked",
          "[collective]") {
  // A symmetric op, and one whose participants fill and check different amounts (only the
  // root has an input): the fill and the check run either way, so the calls start alike.
  const std::vector<std::vector<std::string>> runs = {
      {"--set", "workload.collective.op=all_reduce", "--set",
       R"(workload.collective.sizes=["1KiB","256KiB"])"},
      {"--set", "workload.collective.op=broadcast", "--set",
       "workload.collective.algorithm=one_shot", "--set", "workload.collective.gpus=[4,1,6]",
       "--set", "workload.collective.root=6", "--set",
       R"(workload.collective.sizes=["4608B","1MiB"])"},
  };
  for (const auto& sets : runs) {
    INFO(sets[1]);
    auto args = [&](bool data) {
      std::vector<std::string> a = {"run",   "--quiet",
                                    "--set", "workload.kind=collective",
                                    "--set", fmt::format("gpu.vram.functional_data={}", data)};
      a.insert(a.end(), sets.begin(), sets.end());
      return a;
    };
    const auto on = run_podsim(args(true));
    const auto off = run_podsim(args(false));
    REQUIRE(on.exit_code == 0);
    REQUIRE(off.exit_code == 0);
    const auto a = read_csv(on.out_dir + "/collectives.csv");
    const auto b = read_csv(off.out_dir + "/collectives.csv");
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].at("time_us") == b[i].at("time_us"));
      CHECK(a[i].at("min_us") == b[i].at("min_us"));
      CHECK(a[i].at("busbw_GBps") == b[i].at("busbw_GBps"));
      CHECK(a[i].at("wrong") == "0");
      CHECK(b[i].at("wrong").empty());
      CHECK(b[i].at("elements_checked").empty());
    }
  }
}

TEST_CASE("collective config errors name the key, exit 2, write nothing", "[collective]") {
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"workload.collective.op=all_gather", "workload.collective.algorithm=two_shot"},
       "workload.collective.algorithm: two_shot is an all_reduce algorithm"},
      {{"workload.collective.op=all_to_all", "workload.collective.algorithm=ring"},
       "workload.collective.algorithm: all_to_all and all_to_all_v run one_shot"},
      {{R"(workload.collective.sizes=["100B"])"}, "workload.collective.sizes.0"},
      {{"workload.collective.op=all_to_all", "workload.collective.algorithm=one_shot",
        R"(workload.collective.sizes=["1KiB"])", "workload.collective.gpus=[0,1,2]"},
       "workload.collective.sizes.0: all_to_all: a size must be a multiple of 64 B x the "
       "participants (192 B)"},
      {{"workload.collective.gpus=[0,9]"}, "workload.collective.gpus.1: GPU 9 does not exist"},
      {{"workload.collective.gpus=[0,1,0]"}, "workload.collective.gpus.2: GPU 0 is listed twice"},
      {{"workload.collective.gpus=[4]"}, "at least 2 participants"},
      {{"workload.collective.op=broadcast", "workload.collective.gpus=[0,1]",
        "workload.collective.root=5"},
       "workload.collective.root: GPU 5 is not a participant"},
      {{"workload.collective.chunk_size=100B"}, "workload.collective.chunk_size"},
      {{"workload.collective.sizes=[]"}, "workload.collective.sizes: must name at least one size"},
      {{"workload.collective.op=all_to_all_v", "workload.collective.algorithm=one_shot",
        "workload.collective.gpus=[0,1]", R"(workload.collective.send_bytes=["64B","64B","64B"])"},
       "workload.collective.send_bytes: all_to_all_v needs 4 sizes"},
      {{"workload.collective.op=all_to_all_v", "workload.collective.algorithm=one_shot",
        "workload.collective.gpus=[0,1]",
        R"(workload.collective.send_bytes=["64B","64B","64B","64B"])",
        R"(workload.collective.sizes=["1KiB"])"},
       "workload.collective.sizes: all_to_all_v sends workload.collective.send_bytes"},
      {{R"(workload.collective.send_bytes=["64B"])"},
       "workload.collective.send_bytes: is for all_to_all_v only"},
      {{R"(workload.collective.sizes=["4KiB","1MiB","4KiB"])"},
       "workload.collective.sizes.2: is listed twice (also sizes.0)"},
      {{"workload.on_failure=continue"},
       "workload.on_failure: a collective stops at its first failure"},
      {{"pod.vpod_size=4"}, "pod.vpod_size: a collective runs on a pod that is one vPod"},
      {{"workload.collective.root=2"}, "workload.collective.root: is for broadcast only"},
      {{R"(workload.collective.sizes=["16MiB"])", "workload.collective.chunk_size=128B"},
       "workload.collective.chunk_size: makes 131072 pieces of sizes.0 (at most 65536: make "
       "chunk_size at least 256B)"},
  };
  for (const auto& [sets, want] : cases) {
    std::vector<std::string> args = {"run", "--set", "workload.kind=collective"};
    for (const auto& s : sets)
      args.insert(args.end(), {"--set", s});
    INFO(want);
    const auto r = run_podsim(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(want) != std::string::npos);
    CHECK_FALSE(r.out_dir_exists);
  }
}

TEST_CASE("a collective's sizes are stats a sweep reads, and the report draws them",
          "[collective]") {
  const auto cfg = podsim::test::write_temp_file("coll.json", R"({
    "name": "coll",
    "workload": {"kind": "collective", "setup": "direct",
                 "collective": {"sizes": ["4KiB", "64KiB"], "iterations": 1}}
  })");
  const auto r = run_podsim({"run", cfg, "--quiet"});
  REQUIRE(r.exit_code == 0);
  const auto rows = read_csv(r.out_dir + "/collectives.csv");
  REQUIRE(rows.size() == 2);
  // stats.json holds the CSV's figures (to the CSV's 4 decimals).
  for (const auto& row : rows) {
    const std::string at = "pod.summary.collective.size_" + row.at("bytes") + ".";
    CHECK(r.stat(at + "time") == Approx(std::stod(row.at("time_us"))).margin(1e-4));
    CHECK(r.stat(at + "busbw") == Approx(std::stod(row.at("busbw_GBps"))).margin(1e-4));
    CHECK(r.stat(at + "algbw") == Approx(std::stod(row.at("algbw_GBps"))).margin(1e-4));
  }
  // No access-phase warning: a collective's figures are its calls', not a window's.
  CHECK(r.run->at("warnings").as_array().empty());
  // The report: the collective's table and its two charts.
  const auto rep = run_podsim({"report", r.out_dir}, false);
  REQUIRE(rep.exit_code == 0);
  const std::string html = podsim::test::slurp(r.out_dir + "/report.html");
  CHECK(html.find("<h2>Collective</h2>") != std::string::npos);
  CHECK(html.find("id=\"collective-bw\"") != std::string::npos);
  CHECK(html.find("id=\"collective-time\"") != std::string::npos);
  // A sweep over the algorithms reads the stats of each point.
  const auto sw =
      run_podsim({"sweep", cfg, "--vary", "workload.collective.algorithm=ring,two_shot", "--stat",
                  "pod.summary.collective.size_65536.busbw", "--quiet", "-j", "2"});
  REQUIRE(sw.exit_code == 0);
  const auto points = read_csv(sw.out_dir + "/sweep.csv");
  REQUIRE(points.size() == 2);
  for (const auto& p : points)
    CHECK(std::stod(p.at("pod.summary.collective.size_65536.busbw")) > 0);
}

TEST_CASE("the timeline shows each participant's calls on a track of their own", "[collective]") {
  const std::string trace = podsim::test::write_temp_file("t.json", "");
  const auto r = run_podsim({"run", "--quiet", "--set", "workload.kind=collective", "--set",
                             "workload.collective.gpus=[1,4,6]", "--set",
                             R"(workload.collective.sizes=["4KiB"])", "--set",
                             "workload.collective.iterations=2", "--trace", trace});
  REQUIRE(r.exit_code == 0);
  const auto doc = boost::json::parse(podsim::test::slurp(trace));
  std::map<std::int64_t, int> calls;  // by GPU
  bool named = false;
  for (const auto& e : doc.at("traceEvents").as_array()) {
    const auto& o = e.as_object();
    if (o.at("ph").as_string() == "M" && o.at("name").as_string() == "thread_name" &&
        o.at("args").at("name").as_string() == "collective calls")
      named = true;
    if (o.at("ph").as_string() != "X" || o.at("tid").to_number<int>() != 4) continue;
    const std::string name(o.at("name").as_string());
    CHECK(name.rfind("all_reduce 4KiB call ", 0) == 0);
    CHECK(o.at("dur").to_number<double>() > 0);
    ++calls[o.at("pid").to_number<std::int64_t>()];
  }
  CHECK(named);
  // One warm-up call and two timed ones on each participant, none elsewhere.
  CHECK(calls == std::map<std::int64_t, int>{{1, 3}, {4, 3}, {6, 3}});
}

TEST_CASE("comparing two collective runs: each size's time in both, their ratio, both bandwidths",
          "[collective]") {
  auto run = [](const char* alg) {
    return run_podsim({"run", "--quiet", "--set", "workload.kind=collective", "--set",
                       std::string("workload.collective.algorithm=") + alg, "--set",
                       R"(workload.collective.sizes=["4KiB","64KiB"])", "--set",
                       "workload.collective.iterations=1", "--set", "workload.setup=direct"});
  };
  const auto ring = run("ring"), two = run("two_shot");
  REQUIRE(ring.exit_code == 0);
  REQUIRE(two.exit_code == 0);
  const auto rows_a = read_csv(ring.out_dir + "/collectives.csv");
  const auto rows_b = read_csv(two.out_dir + "/collectives.csv");
  const std::string page = podsim::test::write_temp_file("c.html", "");
  const auto cmp = run_podsim({"report", ring.out_dir, two.out_dir, "-o", page}, false);
  REQUIRE(cmp.exit_code == 0);
  const std::string html = podsim::test::slurp(page);
  CHECK(html.find("<h2>Collectives</h2>") != std::string::npos);
  CHECK(html.find("all_reduce ring over 8 GPUs") != std::string::npos);
  CHECK(html.find("all_reduce two_shot over 8 GPUs") != std::string::npos);
  CHECK(html.find("id=\"collective-bw\"") != std::string::npos);
  // The 4 KiB row: both times and B over A, to three decimals.
  const double ta = std::stod(rows_a[0].at("time_us")), tb = std::stod(rows_b[0].at("time_us"));
  CHECK(html.find(fmt::format("<td>{:.3f}</td>", tb / ta)) != std::string::npos);
}
