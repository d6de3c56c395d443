// Model traces against their dependencies: what each node's start and end must be is computed
// here from the trace alone (longest paths), independently of the model.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "tests/support/run_podsim.hpp"
#include "tests/validation/analysis.hpp"

using podsim::test::read_csv;
using podsim::test::run_podsim;
using podsim::test::write_temp_file;

namespace {
struct Row {
  int gpu = 0;
  double start = 0, end = 0;
};
std::map<std::string, Row> rows_of(const std::string& out_dir) {
  std::map<std::string, Row> out;
  for (const auto& r : read_csv(out_dir + "/model.csv"))
    out[r.at("id")] = {std::stoi(r.at("gpu")), std::stod(r.at("start_ns")),
                       std::stod(r.at("end_ns"))};
  return out;
}
}  // namespace

TEST_CASE(
    "a trace of durations on an idle pod: each node starts when its last parent ends and "
    "the trace ends at its critical path",
    "[validation][model]") {
  // 4 GPUs x 60 nodes of 0.1-20 us, each waiting for up to 3 earlier nodes of its GPU, listed
  // in a shuffled order (the order of the file must not matter).
  std::mt19937 rng(7);
  struct Node {
    std::string id;
    int gpu;
    std::int64_t ns;
    std::vector<std::size_t> deps;
  };
  std::vector<Node> nodes;
  for (int g = 0; g < 4; ++g) {
    const std::size_t first = nodes.size();
    for (int k = 0; k < 60; ++k) {
      Node n{
          fmt::format("g{}n{}", g, k), g, std::uniform_int_distribution<int>(100, 20000)(rng), {}};
      const std::size_t earlier = nodes.size() - first;
      const int parents = earlier ? std::uniform_int_distribution<int>(0, 3)(rng) : 0;
      for (int p = 0; p < parents; ++p)
        n.deps.push_back(first + std::uniform_int_distribution<std::size_t>(0, earlier - 1)(rng));
      nodes.push_back(n);
    }
  }
  // Expected, as longest paths (parents come first in `nodes`).
  std::vector<std::int64_t> start(nodes.size()), end(nodes.size());
  std::int64_t critical = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t d : nodes[i].deps)
      start[i] = std::max(start[i], end[d]);
    end[i] = start[i] + nodes[i].ns;
    critical = std::max(critical, end[i]);
  }
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::shuffle(order.begin(), order.end(), rng);
  std::string text = R"({"nodes": [)";
  for (std::size_t k = 0; k < order.size(); ++k) {
    const Node& n = nodes[order[k]];
    std::vector<std::string> deps;
    for (std::size_t d : n.deps)
      deps.push_back("\"" + nodes[d].id + "\"");
    text += fmt::format(
        R"({}{{"id": "{}", "gpu": {}, "type": "compute", "duration": "{}ns", "deps": [{}]}})",
        k ? ",\n" : "", n.id, n.gpu, n.ns, fmt::join(deps, ", "));
  }
  text += "]}";
  const auto r = run_podsim({"run", "--quiet", "--set", "workload.kind=model", "--set",
                             "workload.model=" + write_temp_file("dag.json", text)});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto rows = rows_of(r.out_dir);
  REQUIRE(rows.size() == nodes.size());
  double t0 = 1e300;
  for (const auto& [id, row] : rows)
    t0 = std::min(t0, row.start);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    INFO(nodes[i].id);
    const Row& got = rows.at(nodes[i].id);
    CHECK(got.start - t0 == Approx(static_cast<double>(start[i])).margin(0.001));
    CHECK(got.end - t0 == Approx(static_cast<double>(end[i])).margin(0.001));
    for (std::size_t d : nodes[i].deps)
      CHECK(got.start >= rows.at(nodes[d].id).end);
  }
  CHECK(r.stat("pod.summary.model.makespan") ==
        Approx(static_cast<double>(critical)).margin(0.001));
}

TEST_CASE("a receive's dependants start when the data has landed, no sooner than its wire time",
          "[validation][model]") {
  // GPU 0 computes 5 us then sends 256 KiB to GPU 1, whose receive is posted at once and whose
  // next node waits for it.
  const std::string trace = write_temp_file("p2p.json", R"({"nodes": [
    {"id": "work", "gpu": 0, "type": "compute", "duration": "5us"},
    {"id": "s", "gpu": 0, "type": "send", "peer": 1, "bytes": "256KiB", "deps": ["work"]},
    {"id": "r", "gpu": 1, "type": "recv", "peer": 0, "bytes": "256KiB"},
    {"id": "use", "gpu": 1, "type": "compute", "duration": "1us", "deps": ["r"]}]})");
  const auto r = run_podsim(
      {"run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto n = rows_of(r.out_dir);
  const auto& c = *r.config;
  // The data alone: 1024 stores of 256 B, each a packet on the wire, over the planes.
  const double wire_ns = 1024.0 * static_cast<double>(podsim::analysis::packet_wire_ps(c, 256)) /
                         static_cast<double>(podsim::analysis::num(c, {"fabric", "planes"})) / 1e3;
  CHECK(n.at("s").start == Approx(n.at("work").end).margin(0.001));
  CHECK(n.at("r").start == Approx(n.at("work").start).margin(0.001));
  CHECK(n.at("r").end - n.at("s").start >= wire_ns);
  CHECK(n.at("use").start == Approx(n.at("r").end).margin(0.001));
  CHECK(n.at("use").end - n.at("use").start == Approx(1000).margin(0.001));
}
