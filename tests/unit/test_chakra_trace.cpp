// Chakra execution traces (sim/pod/chakra_trace) read as model traces: the wire format as
// Chakra's schema numbers it (checked with bytes encoded by hand, not by podsim's schema), what
// each node becomes, and every bad trace a clear error naming the file and the node.
#include <fmt/format.h>
#include <google/protobuf/util/delimited_message_util.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>

#include "sim/pod/chakra_et.pb.h"
#include "sim/pod/chakra_trace.hpp"

using namespace podsim;
using Catch::Matchers::Contains;
namespace pb = podsim::chakra;
namespace fs = std::filesystem;

namespace {

// A fresh directory per test case, removed at its end.
struct TempDir {
  fs::path dir;
  TempDir() {
    static int n = 0;
    dir = fs::temp_directory_path() / fmt::format("podsim-chakra-{}-{}", ::getpid(), n++);
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~TempDir() { fs::remove_all(dir); }
  std::string prefix(const char* name = "t") const { return (dir / name).string(); }
};

// Hand encoding of protobuf's wire format, independent of the schema podsim compiles.
std::string varint(std::uint64_t v) {
  std::string s;
  do {
    s += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return s;
}
std::string field_varint(int field, std::uint64_t v) {
  return varint(field << 3 | 0) + varint(v);
}
std::string field_bytes(int field, const std::string& b) {
  return varint(field << 3 | 2) + varint(b.size()) + b;
}
std::string delimited(const std::string& msg) {
  return varint(msg.size()) + msg;
}

// A message builder over the generated classes, for the richer cases.
pb::Attribute attr_u(const char* name, std::uint64_t v) {
  pb::Attribute a;
  a.set_name(name);
  a.set_uint64_val(v);
  return a;
}
pb::Attribute attr_s(const char* name, const std::string& v) {
  pb::Attribute a;
  a.set_name(name);
  a.set_string_val(v);
  return a;
}
struct Rank {
  std::vector<pb::Node> nodes;
  pb::Node& add(std::uint64_t id, pb::NodeType type, std::vector<pb::Attribute> attrs = {},
                std::vector<std::uint64_t> data_deps = {}) {
    pb::Node& n = nodes.emplace_back();
    n.set_id(id);
    n.set_name(fmt::format("n{}", id));
    n.set_type(type);
    for (auto& a : attrs)
      *n.add_attr() = a;
    for (auto d : data_deps)
      n.add_data_deps(d);
    return n;
  }
};
void write(const std::string& prefix, const std::vector<Rank>& ranks) {
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    std::ofstream out(fmt::format("{}.{}.et", prefix, r), std::ios::binary);
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
    for (const pb::Node& n : ranks[r].nodes)
      REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
  }
}
void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("a Chakra trace encoded by Chakra's field numbers reads as the same collective") {
  // What a Chakra all-reduce microbenchmark holds, rank by rank: GlobalMetadata{version=1},
  // then Node{name=2, type=3 COMM_COLL_NODE (7), attr=10 [AttributeProto{name=1, int64_val=9}]}
  // with comm_type ALL_REDUCE (0) and comm_size 1 MiB, and a compute node
  // Node{id=1, type=COMP_NODE (4), duration_micros=7, data_deps=5} after it.
  TempDir tmp;
  auto attr_int64 = [](const std::string& name, std::uint64_t v) {
    return field_bytes(10, field_bytes(1, name) + field_varint(9, v));
  };
  const std::string meta = delimited(field_bytes(1, "0.0.4"));
  const std::string coll = delimited(field_bytes(2, "all_reduce_1MB") + field_varint(3, 7) +
                                     attr_int64("comm_type", 0) + attr_int64("comm_size", 1 << 20));
  const std::string comp = delimited(field_varint(1, 1) + field_varint(3, 4) +
                                     field_bytes(5, varint(0)) + field_varint(7, 12));
  for (int r = 0; r < 4; ++r)
    write_text(fmt::format("{}.{}.et", tmp.prefix(), r), meta + coll + comp);
  REQUIRE(is_chakra_trace(tmp.prefix()));
  const ModelTrace t = load_chakra_trace(tmp.prefix(), 8, 65536, "");
  REQUIRE(t.nodes.size() == 8);
  CHECK(t.groups.at("@all") == std::vector<std::uint32_t>{0, 1, 2, 3});
  for (int r = 0; r < 4; ++r) {
    const ModelNode& c = t.nodes[2 * r];
    CHECK(c.id == fmt::format("{}:0", r));
    CHECK(c.gpu == static_cast<std::uint32_t>(r));
    CHECK(c.type == ModelNode::Type::Collective);
    CHECK(c.op == coll::Op::AllReduce);
    CHECK(c.algorithm == coll::Algorithm::Ring);
    CHECK(c.bytes == 1 << 20);
    const ModelNode& k = t.nodes[2 * r + 1];
    CHECK(k.type == ModelNode::Type::Compute);
    CHECK(k.duration == Time::us(12));
    CHECK(k.deps == std::vector<std::size_t>{static_cast<std::size_t>(2 * r)});
  }
}

TEST_CASE("a Chakra trace's nodes become compute, collectives over groups, sends and receives") {
  TempDir tmp;
  std::vector<Rank> ranks(4);
  for (std::uint32_t r = 0; r < 4; ++r) {
    Rank& k = ranks[r];
    k.add(10, pb::METADATA_NODE);
    k.add(11, pb::COMP_NODE, {attr_u("num_ops", 2'000'000'000), attr_u("tensor_size", 1 << 20)},
          {10});
    // A collective over the groups file's "7" (ranks 1 and 3) on those two, with podsim's
    // algorithm attribute; every rank then all-gathers 1000 B (rounded up to 1024 B).
    if (r % 2) {
      pb::Node& n = k.add(12, pb::COMM_COLL_NODE,
                          {attr_u("comm_type", pb::ALL_REDUCE), attr_u("comm_size", 4096),
                           attr_s("pg_name", "7"), attr_s("algorithm", "one_shot")});
      n.add_ctrl_deps(11);
    }
    k.add(13, pb::COMM_COLL_NODE, {attr_u("comm_type", pb::ALL_GATHER), attr_u("comm_size", 1000)},
          {11});
  }
  ranks[0].add(14, pb::COMM_SEND_NODE,
               {attr_u("comm_src", 0), attr_u("comm_dst", 2), attr_u("comm_size", 100),
                attr_u("comm_tag", 5)},
               {13});
  ranks[2].add(14, pb::COMM_RECV_NODE,
               {attr_u("comm_src", 0), attr_u("comm_size", 100), attr_u("comm_tag", 5)});
  write(tmp.prefix(), ranks);
  const std::string groups = (tmp.dir / "groups.json").string();
  write_text(groups, R"({"7": [3, 1], "8": [0]})");

  const ModelTrace t = load_chakra_trace(tmp.prefix(), 8, 65536, groups);
  auto node = [&](const std::string& id) -> const ModelNode& {
    for (const ModelNode& n : t.nodes)
      if (n.id == id) return n;
    FAIL("no node " << id);
    throw;
  };
  CHECK(t.groups.at("7") == std::vector<std::uint32_t>{3, 1});
  CHECK(t.groups.count("8") == 0);  // defined, never used
  CHECK(node("0:10").duration == Time{});
  CHECK(node("0:11").flops == 2e9);
  CHECK(node("0:11").memory_bytes == 1u << 20);
  CHECK_FALSE(node("0:11").duration);
  const ModelNode& ar = node("3:12");
  CHECK(ar.group == "7");
  CHECK(ar.algorithm == coll::Algorithm::OneShot);
  CHECK(ar.bytes == 4096);
  CHECK(ar.deps.size() == 1);
  CHECK(t.nodes[ar.deps[0]].id == "3:11");
  CHECK(node("1:13").bytes == 1024);
  CHECK(node("1:13").group == "@all");
  const ModelNode& s = node("0:14");
  CHECK(s.type == ModelNode::Type::Send);
  CHECK(s.peer == 2);
  CHECK(s.bytes == 128);
  CHECK(s.tag == 5);
  CHECK(node("2:14").type == ModelNode::Type::Recv);
  CHECK(node("2:14").peer == 0);
}

TEST_CASE("bad Chakra traces are errors naming the file and the node") {
  const auto coll = [](std::uint64_t type, std::uint64_t size) {
    return std::vector<pb::Attribute>{attr_u("comm_type", type), attr_u("comm_size", size)};
  };
  struct Case {
    const char* what;
    std::function<void(std::vector<Rank>&)> make;
    std::string want;
  };
  const Case cases[] = {
      {"missing dependency", [](auto& r) { r[0].add(1, pb::COMP_NODE, {}, {99}); },
       "t.0.et: node 1 \"n1\": depends on node 99, which is no node"},
      {"duplicate id",
       [](auto& r) {
         r[1].add(1, pb::COMP_NODE);
         r[1].add(1, pb::COMP_NODE);
       },
       "t.1.et: node 1 \"n1\": the id is used twice"},
      {"cycle",
       [](auto& r) {
         r[0].add(1, pb::COMP_NODE, {}, {2});
         r[0].add(2, pb::COMP_NODE, {}, {1});
       },
       "its dependencies make a cycle: \"0:1\" -> \"0:2\" -> \"0:1\""},
      {"unsupported collective",
       [&](auto& r) {
         for (auto& k : r)
           k.add(1, pb::COMM_COLL_NODE, coll(pb::REDUCE, 4096));
       },
       "t.0.et: node 1 \"n1\": comm_type 1 (REDUCE) is not one podsim runs"},
      {"unsupported node type", [](auto& r) { r[0].add(1, pb::MEM_LOAD_NODE); },
       "t.0.et: node 1 \"n1\": node type MEM_LOAD_NODE is not one podsim runs"},
      {"no comm_size",
       [](auto& r) { r[0].add(1, pb::COMM_COLL_NODE, {attr_u("comm_type", pb::ALL_REDUCE)}); },
       "t.0.et: node 1 \"n1\": needs attribute comm_size"},
      {"unknown group",
       [&](auto& r) {
         auto a = coll(pb::ALL_REDUCE, 4096);
         a.push_back(attr_s("pg_name", "5"));
         r[0].add(1, pb::COMM_COLL_NODE, a);
       },
       "t.0.et: node 1 \"n1\": pg_name \"5\" is no group (name the groups file: "
       "workload.model_groups)"},
      {"collective on one rank only",
       [&](auto& r) { r[2].add(1, pb::COMM_COLL_NODE, coll(pb::ALL_REDUCE, 4096)); },
       "group \"@all\": GPU 0 has 0 collective(s) of the group and GPU 2 has 1"},
      {"send without receive",
       [](auto& r) {
         r[0].add(1, pb::COMM_SEND_NODE, {attr_u("comm_dst", 3), attr_u("comm_size", 64)});
       },
       "node \"0:1\": a send with no matching receive (GPU 0 to GPU 3, tag 0)"},
      {"send from another rank",
       [](auto& r) {
         r[1].add(1, pb::COMM_SEND_NODE,
                  {attr_u("comm_src", 0), attr_u("comm_dst", 3), attr_u("comm_size", 64)});
       },
       "t.1.et: node 1 \"n1\": comm_src is 0, but this is rank 1's file"},
      {"receive from a rank that does not exist",
       [](auto& r) {
         r[1].add(1, pb::COMM_RECV_NODE, {attr_u("comm_src", 9), attr_u("comm_size", 64)});
       },
       "t.1.et: node 1 \"n1\": comm_src 9 does not exist (the trace has 4 ranks)"},
      {"an attribute twice",
       [&](auto& r) {
         auto a = coll(pb::ALL_REDUCE, 4096);
         a.push_back(attr_u("comm_size", 1 << 20));
         r[0].add(1, pb::COMM_COLL_NODE, a);
       },
       "t.0.et: node 1 \"n1\": attribute comm_size is given twice"},
      {"a size that cannot be rounded up",
       [&](auto& r) { r[0].add(1, pb::COMM_COLL_NODE, coll(pb::ALL_REDUCE, UINT64_MAX)); },
       "t.0.et: node 1 \"n1\": attribute comm_size: 18446744073709551615 B is more than 2^50 B"},
      {"infinite work",
       [](auto& r) {
         pb::Attribute a;
         a.set_name("num_ops");
         a.set_double_val(std::numeric_limits<double>::infinity());
         r[0].add(1, pb::COMP_NODE, {a});
       },
       "t.0.et: node 1 \"n1\": attribute num_ops: inf is not a finite number of at least 0"},
      {"a size as a double past 2^64",
       [](auto& r) {
         pb::Attribute a;
         a.set_name("comm_size");
         a.set_double_val(1e20);
         r[0].add(1, pb::COMM_COLL_NODE, {attr_u("comm_type", pb::ALL_REDUCE), a});
       },
       "t.0.et: node 1 \"n1\": attribute comm_size: 1e+20 is not a whole number from 0 to "
       "2^64 - 1"},
      {"negative size",
       [](auto& r) {
         pb::Attribute a;
         a.set_name("comm_size");
         a.set_int64_val(-4);
         r[0].add(1, pb::COMM_COLL_NODE, {attr_u("comm_type", pb::ALL_REDUCE), a});
       },
       "t.0.et: node 1 \"n1\": attribute comm_size: -4 is below 0"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    TempDir tmp;
    std::vector<Rank> ranks(4);
    c.make(ranks);
    write(tmp.prefix(), ranks);
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""), Contains(c.want));
  }

  SECTION("files") {
    TempDir tmp;
    std::vector<Rank> ranks(3);
    write(tmp.prefix(), ranks);
    // More ranks than GPUs.
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 2, 65536, ""),
                      Contains("t.2.et: the trace has 3 ranks and the pod 2 GPUs"));
    // A file that only looks like a rank's (a leading zero) is not one.
    // (Read, "x" would be an error of its own; these three ranks hold no node, which is one.)
    write_text(tmp.prefix() + ".01.et", "x");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t: no nodes in it: nothing to run"));
    fs::remove(tmp.prefix() + ".01.et");
    // The last node cut short by exactly its last field (2 bytes): its length says more than
    // the file holds after the length itself.
    {
      pb::Node n;
      n.set_id(1);
      n.set_name(std::string(130, 'x'));
      n.set_type(pb::COMP_NODE);
      n.set_duration_micros(50);
      std::ofstream out(tmp.prefix() + ".1.et", std::ios::binary | std::ios::trunc);
      pb::GlobalMetadata meta;
      meta.set_version("0.0.4");
      REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(meta, &out));
      REQUIRE(google::protobuf::util::SerializeDelimitedToOstream(n, &out));
    }
    fs::resize_file(tmp.prefix() + ".1.et", fs::file_size(tmp.prefix() + ".1.et") - 2);
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.1.et: byte 8: a node of 139 bytes, more than the file holds "
                               "after it"));
    write(tmp.prefix(), ranks);
    // A truncated node, an empty file, a file that is not a trace.
    {
      std::ofstream(tmp.prefix() + ".1.et", std::ios::app | std::ios::binary)
          << delimited(field_varint(1, 5) + field_bytes(2, "abc")).substr(0, 5);
    }
    CHECK_THROWS_WITH(
        load_chakra_trace(tmp.prefix(), 8, 65536, ""),
        Contains("t.1.et: byte 8: a node of 7 bytes, more than the file holds after it"));
    write_text(tmp.prefix() + ".1.et", "");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.1.et: is empty (a Chakra trace starts with its GlobalMetadata)"));
    write_text(tmp.prefix() + ".1.et", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.1.et: byte 0: a GlobalMetadata's length is cut short or "
                               "malformed"));
    // A length past 32 bits is not cut to its low bits (it was: a phantom empty node).
    write(tmp.prefix(), ranks);
    {
      std::ofstream(tmp.prefix() + ".1.et", std::ios::app | std::ios::binary)
          << varint(std::uint64_t{1} << 32) << field_varint(1, 5);
    }
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.1.et: byte 8: a node of 4294967296 bytes, more than the file "
                               "holds after it"));
    // Bytes that do not parse as a node.
    write(tmp.prefix(), ranks);
    {
      std::ofstream(tmp.prefix() + ".1.et", std::ios::app | std::ios::binary)
          << delimited(std::string("\x0f\x01", 2));
    }
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.1.et: byte 8: a malformed node of 2 bytes"));
    // A missing rank's file before a later one's.
    write(tmp.prefix(), ranks);
    fs::remove(tmp.prefix() + ".1.et");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, ""),
                      Contains("t.2.et: the trace has a file for rank 2 but none for rank 1"));
    // The groups file: malformed, a rank the trace lacks, twice.
    write(tmp.prefix(), ranks);
    const std::string g = (tmp.dir / "g.json").string();
    write_text(g, R"({"1": [0, 1)");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, g), Contains("g.json: line 1"));
    write_text(g, R"({"1": [0, 5]})");
    CHECK_THROWS_WITH(
        load_chakra_trace(tmp.prefix(), 8, 65536, g),
        Contains("g.json: group \"1\": rank 5 does not exist (the trace has 3 ranks)"));
    write_text(g, R"({"1": [0, 18446744073709551615]})");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, g),
                      Contains("g.json: group \"1\": rank 18446744073709551615 does not exist"));
    write_text(g, R"({"1": [0, -1]})");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, g),
                      Contains("g.json: group \"1\": a member is not a rank number"));
    write_text(g, R"({"1": [0, 0]})");
    CHECK_THROWS_WITH(load_chakra_trace(tmp.prefix(), 8, 65536, g),
                      Contains("g.json: group \"1\": rank 0 is listed twice"));
    // No trace at all; a file named by its rank instead of the prefix.
    CHECK_FALSE(is_chakra_trace(tmp.prefix("none")));
    CHECK_THROWS_WITH(load_model_trace(tmp.prefix() + ".0.et", 8, 65536),
                      Contains("name a Chakra trace by its prefix"));
    CHECK_THROWS_WITH(load_model_trace(tmp.prefix("none"), 8, 65536),
                      Contains("cannot open the model trace"));
    // A JSON trace does not take a groups file.
    write_text(tmp.prefix("j.json"), R"({"nodes": []})");
    CHECK_THROWS_WITH(load_model_trace(tmp.prefix("j.json"), 8, 65536, g),
                      Contains("workload.model_groups is for Chakra traces"));
  }
}
