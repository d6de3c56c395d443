// Model traces (sim/pod/model_trace): the JSON form read and checked, every bad trace a clear
// error naming the file and the node or group.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "sim/pod/model_trace.hpp"

using namespace podsim;
using Catch::Matchers::Contains;

namespace {
const char* kGood = R"({
  "groups": {"tp": [0, 1, 2, 3]},
  "nodes": [
    {"id": "a0", "gpu": 0, "type": "compute", "duration": "10us"},
    {"id": "a1", "gpu": 1, "type": "compute", "flops": 2e12, "bytes": "1MiB"},
    {"id": "ar0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB", "deps": ["a0"]},
    {"id": "ar1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB", "deps": ["a1"]},
    {"id": "ar2", "gpu": 2, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB"},
    {"id": "ar3", "gpu": 3, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB"},
    {"id": "s", "gpu": 0, "type": "send", "peer": 5, "bytes": "64KiB", "tag": 3, "deps": ["ar0"]},
    {"id": "r", "gpu": 5, "type": "recv", "peer": 0, "bytes": "64KiB", "tag": 3}
  ]
})";
std::string with_node(const std::string& node) {
  std::string t = kGood;
  const auto at = t.rfind(']');
  return t.substr(0, at - 3) + ",\n" + node + "\n  ]\n}";
}
}  // namespace

TEST_CASE("a model trace reads: nodes, their dependencies, groups, sends and receives") {
  const ModelTrace t = parse_model_trace(kGood, "t.json", 8, 65536);
  REQUIRE(t.nodes.size() == 8);
  CHECK(t.groups.at("tp") == std::vector<std::uint32_t>{0, 1, 2, 3});
  CHECK(t.nodes[0].duration == Time::us(10));
  CHECK(t.nodes[1].flops == 2e12);
  CHECK(t.nodes[1].memory_bytes == 1 << 20);
  CHECK(t.nodes[2].type == ModelNode::Type::Collective);
  CHECK(t.nodes[2].deps == std::vector<std::size_t>{0});
  CHECK(t.nodes[2].algorithm == coll::Algorithm::Ring);
  CHECK(t.nodes[6].type == ModelNode::Type::Send);
  CHECK(t.nodes[6].peer == 5);
  CHECK(t.nodes[6].tag == 3);
  CHECK(t.nodes[7].type == ModelNode::Type::Recv);
  // Not every node's time is known in advance: no critical path.
  CHECK_FALSE(t.critical_path());
}

TEST_CASE("a model trace of durations has the longest chain as its critical path") {
  const ModelTrace t = parse_model_trace(R"({"nodes": [
    {"id": "a", "gpu": 0, "type": "compute", "duration": "5us"},
    {"id": "b", "gpu": 0, "type": "compute", "duration": "7us", "deps": ["a"]},
    {"id": "c", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["a"]},
    {"id": "d", "gpu": 0, "type": "compute", "duration": "2us", "deps": ["b", "c"]},
    {"id": "e", "gpu": 1, "type": "compute", "duration": "13us"}
  ]})",
                                         "t.json", 2, 65536);
  CHECK(t.critical_path() == Time::us(14));
}

TEST_CASE("bad model traces are errors naming the file and the node") {
  const std::pair<std::string, std::string> cases[] = {
      {"{", "t.json: line 1, column 2: invalid JSON"},
      {R"({"nodes": [], "nodez": 1})", "t.json: the trace: unknown key \"nodez\""},
      {R"({"groups": {}})", "t.json: the trace: needs \"nodes\""},
      {R"({"nodes": []})", "t.json: no nodes in it: nothing to run"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["nope"]})"),
       "t.json: node \"x\": depends on \"nope\", which is no node"},
      {with_node(R"({"id": "a0", "gpu": 0, "type": "compute", "duration": "1us"})"),
       "t.json: node \"a0\": the id is used twice (nodes[0] and nodes[8])"},
      {with_node(R"({"id": "x", "gpu": 9, "type": "compute", "duration": "1us"})"),
       "t.json: node \"x\": GPU 9 does not exist (the pod has 8)"},
      {with_node(R"({"id": "x", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["a1"]})"),
       "node \"x\": depends on \"a1\" of GPU 1: a node waits only for nodes of its own GPU"},
      {with_node(R"({"id": "x", "gpu": 0, "type": "compute", "duration": "1 parsec"})"),
       "node \"x\": \"duration\": \"1 parsec\" is not a time"},
      {with_node(R"({"id": "x", "gpu": 0, "type": "compute"})"),
       "node \"x\": a compute node needs a \"duration\", or \"flops\" and/or \"bytes\""},
      {with_node(R"({"id": "x", "gpu": 0, "type": "compute", "duration": "1us", "colour": 1})"),
       "node \"x\": unknown key \"colour\""},
      {with_node(R"({"id": "x", "gpu": 0, "type": "teleport"})"),
       "node \"x\": \"type\": \"teleport\" is not one of compute, collective, send, recv"},
      {with_node(
           R"({"id": "x", "gpu": 4, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB"})"),
       "node \"x\": GPU 4 is not a member of group \"tp\""},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "dp", "bytes": "1MiB"})"),
       "node \"x\": no group \"dp\""},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_gather", "group": "tp", "bytes": "1MiB", "algorithm": "two_shot"})"),
       "node \"x\": two_shot is an all_reduce algorithm"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "64KiB"})"),
       "group \"tp\": GPU 0 has 2 collective(s) of the group and GPU 1 has 1"},
      {with_node(R"({"id": "x", "gpu": 0, "type": "send", "peer": 6, "bytes": "64KiB"})"),
       "node \"x\": a send with no matching receive (GPU 0 to GPU 6, tag 0)"},
      {with_node(R"({"id": "x", "gpu": 6, "type": "recv", "peer": 5, "bytes": "64KiB", "tag": 1})"),
       "node \"x\": a receive with no matching send (GPU 5 to GPU 6, tag 1)"},
      {with_node(R"({"id": "x", "gpu": 0, "type": "send", "peer": 0, "bytes": "64KiB"})"),
       "node \"x\": a GPU does not send to itself"},
      {R"({"groups": {"g": [0, 0]}, "nodes": []})", "t.json: group \"g\": GPU 0 is listed twice"},
      {R"({"nodes": [{"id": "a,b", "gpu": 0, "type": "compute", "duration": "1us"}]})",
       "t.json: nodes[0]: \"id\": \"a,b\" is not an id"},
      {R"({"groups": {"g": [3]}, "nodes": []})",
       "t.json: group \"g\": a group needs at least 2 GPUs"},
      {R"({"nodes": [
          {"id": "a", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["c"]},
          {"id": "b", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["a"]},
          {"id": "c", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["b"]}]})",
       "its dependencies make a cycle: \"a\" -> \"c\" -> \"b\" -> \"a\""},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB", "root": 1})"),
       "node \"x\": \"root\" is for broadcast only"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "broadcast", "group": "tp", "bytes": "1MiB", "root": 5})"),
       "node \"x\": \"root\": GPU 5 is not a member of group \"tp\""},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_to_all_v", "group": "tp", "bytes": "1MiB"})"),
       "node \"x\": all_to_all_v takes \"send_bytes\" (a size per member of its group), not "
       "\"bytes\""},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_to_all_v", "group": "tp", "send_bytes": ["64KiB"]})"),
       "node \"x\": \"send_bytes\": expected 4 sizes (one per member of group \"tp\", in its "
       "order)"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_to_all_v", "group": "tp", "send_bytes": ["0B", "100B", "0B", "0B"]})"),
       "node \"x\": \"send_bytes\": 100B is not a multiple of 64 B"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB", "send_bytes": []})"),
       "node \"x\": \"send_bytes\" is for all_to_all_v only"},
      {with_node(
           R"({"id": "x", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "8GiB"})"),
       "node \"x\": makes 131072 pieces of workload.collective.chunk_size (65536 B; at most "
       "65536: make chunk_size at least 131072 B)"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(parse_model_trace(text, "t.json", 8, 65536), Contains(want));
  }
  // The collectives' k-th calls must match across the group's members.
  std::string differ = kGood;
  differ.replace(
      differ.find(
          R"("gpu": 3, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB")"),
      std::string(
          R"("gpu": 3, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "1MiB")")
          .size(),
      R"("gpu": 3, "type": "collective", "op": "all_reduce", "group": "tp", "bytes": "2MiB")");
  CHECK_THROWS_WITH(
      parse_model_trace(differ, "t.json", 8, 65536),
      Contains("its collective 1 is node \"ar0\" on GPU 0 and node \"ar3\" on GPU 3"));
}

TEST_CASE("an all_to_all_v in a model trace takes each member's sizes to every member") {
  const char* text = R"({
    "groups": {"ep": [2, 0, 1]},
    "nodes": [
      {"id": "d0", "gpu": 0, "type": "collective", "op": "all_to_all_v", "group": "ep", "send_bytes": ["1MiB", "0B", "64KiB"]},
      {"id": "d1", "gpu": 1, "type": "collective", "op": "all_to_all_v", "group": "ep", "send_bytes": ["1MiB", "128KiB", "0B"]},
      {"id": "d2", "gpu": 2, "type": "collective", "op": "all_to_all_v", "group": "ep", "send_bytes": ["0B", "0B", "0B"]}
    ]})";
  const ModelTrace t = parse_model_trace(text, "t.json", 4, 65536);
  REQUIRE(t.nodes.size() == 3);
  CHECK(t.nodes[0].op == coll::Op::AllToAllV);
  CHECK(t.nodes[0].algorithm == coll::Algorithm::OneShot);
  CHECK(t.nodes[0].send_bytes == std::vector<std::uint64_t>{1 << 20, 0, 64 << 10});
  CHECK(t.nodes[0].bytes == (1u << 20) + (64u << 10));  // what the member sends
  CHECK(t.nodes[2].bytes == 0);
  // Members' rows differ; their ops may not.
  std::string other = text;
  const std::string d2 = R"("op": "all_to_all_v", "group": "ep", "send_bytes": ["0B", "0B", "0B"])";
  other.replace(other.find(d2), d2.size(), R"("op": "all_to_all", "group": "ep", "bytes": "192B")");
  CHECK_THROWS_WITH(parse_model_trace(other, "t.json", 4, 65536),
                    Contains("its collective 1 is node \"d2\" on GPU 2 and node \"d0\" on GPU 0, "
                             "which differ in op, size, algorithm or root"));
}

TEST_CASE("a model trace of any depth is read and its critical path found") {
  // 200,000 nodes in one chain, listed last first: no recursion as deep as the chain.
  std::string text = R"({"nodes": [)";
  const int n = 200000;
  for (int i = n - 1; i >= 0; --i) {
    text += fmt::format(R"({{"id": "n{}", "gpu": 0, "type": "compute", "duration": "1ns")", i);
    text += i > 0 ? fmt::format(R"(, "deps": ["n{}"]}},)", i - 1) : std::string("}");
  }
  text += "]}";
  const ModelTrace t = parse_model_trace(text, "t.json", 1, 65536);
  CHECK(t.critical_path() == Time::ns(n));
  // The same chain closed into a cycle is found and named.
  const std::string closed = text.substr(0, text.size() - 3) + R"(, "deps": ["n199999"]}]})";
  CHECK_THROWS_WITH(parse_model_trace(closed, "t.json", 1, 65536),
                    Contains("its dependencies make a cycle"));
}

TEST_CASE("a model trace whose calls would wait for each other is an error naming the cycle") {
  const std::pair<std::string, std::string> cases[] = {
      // GPU 0 lists the group's first call after the second, which it makes wait for it.
      {R"({"groups": {"g": [0, 1]}, "nodes": [
          {"id": "x1", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "g", "bytes": "64KiB", "deps": ["x2"]},
          {"id": "x2", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "g", "bytes": "64KiB"},
          {"id": "y1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "g", "bytes": "64KiB"},
          {"id": "y2", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "g", "bytes": "64KiB"}]})",
       "node \"x2\": waits for itself through dependencies and the order of calls (a group's "
       "calls run in their order on each member, a call once every member reaches it): \"x2\" "
       "(a call of group \"g\") -> \"x1\" (a call of group \"g\") -> \"x2\" (a call of group "
       "\"g\")"},
      // GPU 0 waits for a's call before b's, GPU 1 for b's before a's.
      {R"({"groups": {"a": [0, 1], "b": [0, 1]}, "nodes": [
          {"id": "a0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
          {"id": "b0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "64KiB", "deps": ["a0"]},
          {"id": "b1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "64KiB"},
          {"id": "a1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB", "deps": ["b1"]}]})",
       "waits for itself through dependencies and the order of calls"},
      // Two sends on one channel, the first waiting for the second through a compute node.
      {R"({"nodes": [
          {"id": "s1", "gpu": 0, "type": "send", "peer": 1, "bytes": "64KiB", "deps": ["c"]},
          {"id": "s2", "gpu": 0, "type": "send", "peer": 1, "bytes": "64KiB"},
          {"id": "c", "gpu": 0, "type": "compute", "duration": "1us", "deps": ["s2"]},
          {"id": "r1", "gpu": 1, "type": "recv", "peer": 0, "bytes": "64KiB"},
          {"id": "r2", "gpu": 1, "type": "recv", "peer": 0, "bytes": "64KiB"}]})",
       "\"c\" -> \"s1\" (a send or receive)"},
      // podsim's own names are reserved.
      {R"({"groups": {"@p2p.0.1.0": [0, 1]}, "nodes": []})",
       "group \"@p2p.0.1.0\": a group's name may not be empty or start with '@'"},
  };
  for (const auto& [text, want] : cases) {
    INFO(text);
    CHECK_THROWS_WITH(parse_model_trace(text, "t.json", 8, 65536), Contains(want));
  }
  // The same calls in an order every member can follow read fine.
  CHECK_NOTHROW(parse_model_trace(R"({"groups": {"a": [0, 1], "b": [0, 1]}, "nodes": [
      {"id": "a0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"},
      {"id": "b0", "gpu": 0, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "64KiB", "deps": ["a0"]},
      {"id": "b1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "b", "bytes": "64KiB"},
      {"id": "a1", "gpu": 1, "type": "collective", "op": "all_reduce", "group": "a", "bytes": "64KiB"}]})",
                                  "t.json", 8, 65536));
}

TEST_CASE("a broadcast in a model trace has a root its members agree on") {
  auto trace = [](int root3) {
    std::string nodes;
    for (int g : {2, 0, 3})
      nodes += fmt::format(
          R"({}{{"id": "b{}", "gpu": {}, "type": "collective", "op": "broadcast", "group": "g",
               "bytes": "64KiB", "root": {}}})",
          nodes.empty() ? "" : ",", g, g, g == 3 ? root3 : 3);
    return R"({"groups": {"g": [2, 0, 3]}, "nodes": [)" + nodes + "]}";
  };
  const ModelTrace t = parse_model_trace(trace(3), "t.json", 4, 65536);
  CHECK(t.nodes[0].root == 3);
  CHECK_THROWS_WITH(parse_model_trace(trace(0), "t.json", 4, 65536),
                    Contains("its collective 1 is node \"b2\" on GPU 2 and node \"b3\" on GPU 3, "
                             "which differ in op, size, algorithm or root"));
  // Without one, the group's first GPU.
  const ModelTrace d = parse_model_trace(R"({"groups": {"g": [2, 0]}, "nodes": [
      {"id": "a", "gpu": 2, "type": "collective", "op": "broadcast", "group": "g", "bytes": "64KiB"},
      {"id": "b", "gpu": 0, "type": "collective", "op": "broadcast", "group": "g", "bytes": "64KiB"}]})",
                                         "t.json", 4, 65536);
  CHECK(d.nodes[1].root == 2);
}

TEST_CASE("a model trace that is no text file is refused as read, not read to the end") {
  // /dev/zero would be read until memory ran out.
  CHECK_THROWS_WITH(podsim::load_model_trace("/dev/zero", 8, 65536, ""),
                    Catch::Contains("/dev/zero:1: a NUL byte: not a JSON model trace"));
}
