// Model traces (workload.kind model) end to end: nodes run in dependency order, a trace of known
// critical path ends at its length, collectives and sends run over the fabric, bad traces are
// clear errors.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <map>

#include "tests/support/run_podsim.hpp"

using podsim::test::read_csv;
using podsim::test::run_podsim;
using podsim::test::write_temp_file;

namespace {
struct Ran {
  std::string gpu, type;
  double start = 0, end = 0;
};
std::map<std::string, Ran> nodes_of(const podsim::test::PodsimRun& r) {
  std::map<std::string, Ran> out;
  for (const auto& row : read_csv(r.out_dir + "/model.csv"))
    out[row.at("id")] = {row.at("gpu"), row.at("type"), std::stod(row.at("start_ns")),
                         std::stod(row.at("end_ns"))};
  return out;
}
}  // namespace

TEST_CASE("a model trace of durations runs in dependency order and ends at its critical path",
          "[model]") {
  // GPU 0: a (5 us), then b (7 us) and c (1 us) together, then d (2 us): 14 us. GPU 1: e (13 us).
  const std::string trace = write_temp_file("t.json", R"({"nodes": [
    {"id": "a", "gpu": 0, "type": "compute", "duration": "5us"},
    {"id": "b", "gpu": 0, "type": "compute", "duration": "7us", "deps": ["a"]},
    {"id": "c", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["a"]},
    {"id": "d", "gpu": 0, "type": "compute", "duration": "2us", "deps": ["b", "c"]},
    {"id": "e", "gpu": 1, "type": "compute", "duration": "13us"}
  ]})");
  const auto r = run_podsim(
      {"run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace});
  REQUIRE(r.exit_code == 0);
  const auto n = nodes_of(r);
  REQUIRE(n.size() == 5);
  CHECK(n.at("b").start == n.at("a").end);
  CHECK(n.at("c").start == n.at("a").end);  // overlapping b
  CHECK(n.at("d").start == n.at("b").end);  // the later of its parents
  CHECK(n.at("e").start == n.at("a").start);
  CHECK(n.at("d").end - n.at("a").start == Approx(14000));
  CHECK(r.stat("pod.summary.model.makespan") == Approx(14000));
}

TEST_CASE("a model trace's collectives and sends run over the fabric after what they wait for",
          "[model]") {
  // Tensor parallel over GPUs 0-3: compute, an all-reduce, compute; GPU 0 then sends to GPU 5.
  std::string nodes;
  for (int g = 0; g < 4; ++g)
    nodes += fmt::format(
        R"({{"id": "fwd{0}", "gpu": {0}, "type": "compute", "duration": "{1}us"}},
           {{"id": "ar{0}", "gpu": {0}, "type": "collective", "op": "all_reduce", "group": "tp",
             "bytes": "1MiB", "deps": ["fwd{0}"]}},
           {{"id": "post{0}", "gpu": {0}, "type": "compute", "duration": "3us", "deps": ["ar{0}"]}},)",
        g, 2 + g);
  nodes += R"({"id": "s", "gpu": 0, "type": "send", "peer": 5, "bytes": "256KiB", "deps": ["ar0"]},
              {"id": "r", "gpu": 5, "type": "recv", "peer": 0, "bytes": "256KiB"},
              {"id": "use", "gpu": 5, "type": "compute", "duration": "1us", "deps": ["r"]})";
  const std::string trace =
      write_temp_file("t.json", R"({"groups": {"tp": [0, 1, 2, 3]}, "nodes": [)" + nodes + "]}");
  const auto r = run_podsim(
      {"run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto n = nodes_of(r);
  REQUIRE(n.size() == 15);
  for (int g = 0; g < 4; ++g) {
    const std::string s = std::to_string(g);
    CHECK(n.at("ar" + s).start >= n.at("fwd" + s).end);
    CHECK(n.at("post" + s).start >= n.at("ar" + s).end);
  }
  // The all-reduce ends after the slowest participant's compute (GPU 3's 5 us) and its data.
  CHECK(n.at("ar0").end > n.at("fwd3").end);
  CHECK(n.at("s").start >= n.at("ar0").end);
  CHECK(n.at("use").start >= n.at("r").end);
  CHECK(n.at("r").end > n.at("s").start);
  CHECK(r.stat("pod.gpu0.agent.remote_writes") > 1000);
}

TEST_CASE("bad model traces and settings are errors naming the node, exit 2, nothing written",
          "[model]") {
  const std::string cycle = write_temp_file("c.json", R"({"nodes": [
    {"id": "a", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["b"]},
    {"id": "b", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["a"]}]})");
  const std::string unknown = write_temp_file("u.json", R"({"nodes": [
    {"id": "a", "gpu": 12, "type": "compute", "duration": "1us"}]})");
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"workload.kind=model"}, "workload.model: workload.kind model needs a model trace"},
      {{"workload.model=" + cycle}, "workload.model: is read only when workload.kind is"},
      {{"workload.kind=model", "workload.model=" + cycle},
       "model trace error: " + cycle + ": node \"a\": its dependencies make a cycle"},
      {{"workload.kind=model", "workload.model=" + unknown},
       "node \"a\": GPU 12 does not exist (the pod has 8)"},
      {{"workload.kind=model", "workload.model=/nonexistent/t.json"},
       "cannot open the model trace"},
  };
  for (const auto& [sets, want] : cases) {
    std::vector<std::string> args = {"run"};
    for (const auto& s : sets)
      args.insert(args.end(), {"--set", s});
    INFO(want);
    const auto r = run_podsim(args);
    CHECK(r.exit_code == 2);
    CHECK(r.err.find(want) != std::string::npos);
    CHECK_FALSE(r.out_dir_exists);
  }
}
