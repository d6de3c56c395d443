// Model traces (workload.kind model) end to end: nodes run in dependency order, a trace of known
// critical path ends at its length, collectives and sends run over the fabric, bad traces are
// clear errors.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "sim/pod/chakra_et.pb.h"

#include "tests/support/run_podsim.hpp"

using podsim::test::read_csv;
using podsim::test::run_podsim;
using podsim::test::write_temp_file;

namespace {
struct Ran {
  std::string gpu, type;
  double start = 0, end = 0;
};
// podsim run of the model trace at `trace`, with further --set arguments.
podsim::test::PodsimRun run_model(const std::string& trace,
                                  const std::vector<std::string>& sets = {}) {
  std::vector<std::string> args = {
      "run", "--quiet", "--set", "workload.kind=model", "--set", "workload.model=" + trace};
  for (const std::string& s : sets)
    args.insert(args.end(), {"--set", s});
  return run_podsim(args);
}
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
  const auto r = run_model(trace);
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
  const auto r = run_model(trace);
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

TEST_CASE("an all_to_all_v in a model trace runs each member's own sizes", "[model]") {
  // Four GPUs each send 576 KiB: spread evenly, or 448 KiB of it to GPU 1 (a popular expert).
  auto run = [](bool skewed) {
    std::string nodes;
    for (int g = 0; g < 4; ++g) {
      std::vector<std::string> row;
      for (int p = 0; p < 4; ++p)
        row.push_back(p == g              ? "\"0B\""
                      : !skewed || g == 1 ? "\"192KiB\""
                      : p == 1            ? "\"448KiB\""
                                          : "\"64KiB\"");
      nodes += fmt::format(
          R"({}{{"id": "d{}", "gpu": {}, "type": "collective", "op": "all_to_all_v", "group": "ep",
                "send_bytes": [{}]}})",
          g ? "," : "", g, g, fmt::join(row, ", "));
    }
    const std::string trace =
        write_temp_file("v.json", R"({"groups": {"ep": [0, 1, 2, 3]}, "nodes": [)" + nodes + "]}");
    const auto r = run_model(trace);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    return r;
  };
  const auto even = run(false), hot = run(true);
  // GPU 1 receives 3 x 448 KiB against 3 x 192 KiB: its share of the call is what takes long.
  CHECK(hot.stat("pod.summary.model.makespan") > 1.8 * even.stat("pod.summary.model.makespan"));
  CHECK(hot.stat("pod.gpu1.vram.bytes_written") > 2 * even.stat("pod.gpu1.vram.bytes_written"));
}

TEST_CASE("a Chakra trace runs as its JSON twin: the same nodes at the same times", "[model]") {
  namespace pb = podsim::chakra;
  // Ranks 0-3: compute, an all-reduce over every rank, an all-gather over the groups file's
  // group "2" (ranks 2 and 3), compute by work; rank 0 sends to rank 1.
  std::string json_nodes;
  const std::string prefix = write_temp_file("twin.0.et", "");
  const std::string base = prefix.substr(0, prefix.size() - 5);
  const std::string groups = write_temp_file("twin-groups.json", R"({"2": [2, 3]})");
  for (std::uint32_t r = 0; r < 4; ++r) {
    std::ofstream out(fmt::format("{}.{}.et", base, r), std::ios::binary | std::ios::trunc);
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
    auto node = [&](std::uint64_t id, pb::NodeType type,
                    std::vector<std::pair<const char*, std::string>> attrs,
                    std::vector<std::uint64_t> deps) {
      pb::Node n;
      n.set_id(id);
      n.set_type(type);
      for (const auto& [k, v] : attrs) {
        pb::Attribute* a = n.add_attr();
        a->set_name(k);
        if (std::string(k) == "pg_name")
          a->set_string_val(v);
        else
          a->set_int64_val(std::stoll(v));
      }
      for (auto d : deps)
        n.add_data_deps(d);
      if (type == pb::COMP_NODE && attrs.empty()) n.set_duration_micros(2 + r);
      REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
    };
    node(1, pb::COMP_NODE, {}, {});
    json_nodes += fmt::format(
        R"({{"id": "{0}:1", "gpu": {0}, "type": "compute", "duration": "{1}us"}},)", r, 2 + r);
    node(2, pb::COMM_COLL_NODE, {{"comm_type", "0"}, {"comm_size", "262144"}}, {1});
    json_nodes += fmt::format(
        R"({{"id": "{0}:2", "gpu": {0}, "type": "collective", "op": "all_reduce", "group": "all",
             "bytes": "256KiB", "deps": ["{0}:1"]}},)",
        r);
    std::string last = "2";
    if (r >= 2) {
      node(3, pb::COMM_COLL_NODE, {{"comm_type", "2"}, {"comm_size", "65536"}, {"pg_name", "2"}},
           {2});
      json_nodes += fmt::format(
          R"({{"id": "{0}:3", "gpu": {0}, "type": "collective", "op": "all_gather", "group": "2",
               "bytes": "64KiB", "deps": ["{0}:2"]}},)",
          r);
      last = "3";
    }
    node(4, pb::COMP_NODE, {{"num_ops", "4000000000"}, {"tensor_size", "1048576"}},
         {std::stoull(last)});
    json_nodes += fmt::format(
        R"({{"id": "{0}:4", "gpu": {0}, "type": "compute", "flops": 4e9, "bytes": "1MiB",
             "deps": ["{0}:{1}"]}},)",
        r, last);
    if (r == 0) {
      node(5, pb::COMM_SEND_NODE, {{"comm_dst", "1"}, {"comm_size", "65536"}}, {4});
      json_nodes += R"({"id": "0:5", "gpu": 0, "type": "send", "peer": 1, "bytes": "64KiB",
                        "deps": ["0:4"]},)";
    }
    if (r == 1) {
      node(5, pb::COMM_RECV_NODE, {{"comm_src", "0"}, {"comm_size", "65536"}}, {});
      json_nodes += R"({"id": "1:5", "gpu": 1, "type": "recv", "peer": 0, "bytes": "64KiB"},)";
    }
  }
  json_nodes.pop_back();
  const std::string json =
      write_temp_file("twin.json", R"({"groups": {"all": [0, 1, 2, 3], "2": [2, 3]}, "nodes": [)" +
                                       json_nodes + "]}");
  const auto c = run_model(base, {"workload.model_groups=" + groups});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const auto j = run_model(json);
  INFO(j.err);
  REQUIRE(j.exit_code == 0);
  const auto a = nodes_of(c), b = nodes_of(j);
  REQUIRE(a.size() == 16);
  REQUIRE(b.size() == a.size());
  for (const auto& [id, x] : a) {
    INFO(id);
    REQUIRE(b.count(id));
    CHECK(x.type == b.at(id).type);
    CHECK(x.start == b.at(id).start);
    CHECK(x.end == b.at(id).end);
  }
  CHECK(a.at("3:3").start >= a.at("3:2").end);
  CHECK(c.stat("pod.summary.model.makespan") == j.stat("pod.summary.model.makespan"));
  // A groups file with a JSON trace, or a Chakra trace naming a group it lacks: exit 2.
  const auto bad =
      run_podsim({"run", "--set", "workload.kind=model", "--set", "workload.model=" + base});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("twin.2.et: node 3: pg_name \"2\" is no group") != std::string::npos);
  CHECK_FALSE(bad.out_dir_exists);
}

TEST_CASE("a GPU's ready communications run side by side, whatever order each GPU lists them in",
          "[model]") {
  // GPU 0 lists group a's all-reduce before b's, GPU 1 the other way round; GPU 2 posts its
  // receive from GPU 0 at once, although GPU 0 sends only after both all-reduces. Run one at a
  // time, GPUs 0 and 1 (or 2, stuck in its receive) would wait for each other for ever.
  const std::string trace = write_temp_file("o.json", R"({
    "groups": {"a": [0, 1], "b": [0, 1], "c": [2, 3]},
    "nodes": [
      {"id": "a0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "256KiB"},
      {"id": "b0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "256KiB"},
      {"id": "b1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "256KiB"},
      {"id": "a1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "256KiB"},
      {"id": "s", "gpu": 0, "type": "send", "peer": 2, "bytes": "64KiB", "deps": ["a0", "b0"]},
      {"id": "r", "gpu": 2, "type": "recv", "peer": 0, "bytes": "64KiB"},
      {"id": "after", "gpu": 2, "type": "collective", "op": "all_reduce", "group": "c", "bytes": "64KiB", "deps": ["r"]},
      {"id": "c3", "gpu": 3, "type": "collective", "op": "all_reduce", "group": "c", "bytes": "64KiB"}
    ]})");
  const auto r = run_model(trace);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto n = nodes_of(r);
  REQUIRE(n.size() == 8);
  // Both groups' calls overlap on GPUs 0 and 1; the send waits for both; the receive spans it.
  CHECK(n.at("a0").start < n.at("b0").end);
  CHECK(n.at("b0").start < n.at("a0").end);
  CHECK(n.at("s").start >= std::max(n.at("a0").end, n.at("b0").end));
  CHECK(n.at("r").start < n.at("s").start);
  CHECK(n.at("r").end > n.at("s").start);
  CHECK(n.at("after").start >= n.at("r").end);
}

TEST_CASE("a long chain of nodes runs in memory that does not grow with its length squared",
          "[model]") {
  // 2 GPUs x 20,000 compute nodes of 10 ns, each waiting for the one before (a thread per node,
  // each started from its parent's, took 1.2 GB at 4,000 and died at 8,000).
  std::string text = R"({"nodes": [)";
  for (int g = 0; g < 2; ++g)
    for (int k = 0; k < 20000; ++k)
      text += fmt::format(
          R"({}{{"id": "g{}n{}", "gpu": {}, "type": "compute", "duration": "10ns"{}}})",
          g || k ? "," : "", g, k, g, k ? fmt::format(R"(, "deps": ["g{}n{}"])", g, k - 1) : "");
  text += "]}";
  const auto r = run_model(write_temp_file("chain.json", text));
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.stat("pod.summary.model.makespan") == Approx(200000));
  const std::string run = podsim::test::slurp(r.out_dir + "/run.json");
  const auto at = run.find("\"peak_rss_bytes\": ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(run.substr(at + 18)) < 1e9);
}

TEST_CASE("a compute node too long for any run leaves the run unfinished, not done at once",
          "[model]") {
  // Its end would overflow the clock: it was taken as past, and the run "finished" in 1 ns.
  const std::string trace = write_temp_file("long.json", R"({"nodes": [
    {"id": "a", "gpu": 0, "type": "compute", "duration": "1ns"},
    {"id": "b", "gpu": 0, "type": "compute", "duration": "9223372036854775807ps", "deps": ["a"]}]})");
  const auto r = run_model(trace, {"sim.max_time=1ms"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("had not finished at sim.max_time") != std::string::npos);
}

TEST_CASE("a broadcast in a model trace starts from its root", "[model]") {
  // A ring broadcast over GPUs [0, 1, 2, 3]: the root only sends, so it is done first, and the
  // GPU after it in the ring gets the data before the one before it (three hops on).
  for (int root : {2, 1}) {
    INFO("root " << root);
    std::string nodes;
    for (int g = 0; g < 4; ++g)
      nodes += fmt::format(
          R"({}{{"id": "b{}", "gpu": {}, "type": "collective", "op": "broadcast", "group": "g",
               "bytes": "1MiB", "root": {}}})",
          g ? "," : "", g, g, root);
    const std::string trace =
        write_temp_file("bc.json", R"({"groups": {"g": [0, 1, 2, 3]}, "nodes": [)" + nodes + "]}");
    const auto r = run_model(trace);
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto n = nodes_of(r);
    const auto end = [&](int g) { return n.at("b" + std::to_string(g % 4)).end; };
    for (int k = 1; k < 4; ++k)
      CHECK(end(root) < end(root + k));
    CHECK(end(root + 1) < end(root + 3));
  }
}
