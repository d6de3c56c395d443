#include "sim/pod/model_trace.hpp"
#include "sim/core/files.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include "sim/core/config_io.hpp"
#include "sim/pod/chakra_trace.hpp"

namespace podsim {

namespace json = boost::json;

namespace {

std::string kind_of(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "true or false";
    case json::kind::int64:
    case json::kind::uint64:
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "?";
}

// Reads one node's or group's fields, each error naming the file and where.
class Reader {
 public:
  Reader(const std::string& file, std::string where) : file_(file), where_(std::move(where)) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelTraceError(fmt::format("{}: {}: {}", file_, where_, what));
  }
  const json::object& object(const json::value& v) const {
    if (!v.is_object()) fail("expected an object, got " + kind_of(v));
    return v.get_object();
  }
  std::string string(const json::object& o, const char* key) const {
    const json::value* v = o.if_contains(key);
    if (!v) fail(fmt::format("needs \"{}\"", key));
    if (!v->is_string()) fail(fmt::format("\"{}\": expected a string, got {}", key, kind_of(*v)));
    return std::string(v->get_string());
  }
  std::uint64_t whole(const json::object& o, const char* key, std::uint64_t hi) const {
    const json::value* v = o.if_contains(key);
    if (!v) fail(fmt::format("needs \"{}\"", key));
    json::error_code ec;
    const auto n = v->to_number<std::uint64_t>(ec);
    if (ec || !(v->is_int64() || v->is_uint64()))
      fail(fmt::format("\"{}\": expected a whole number of at least 0, got {}", key,
                       v->is_number() ? json::serialize(*v) : kind_of(*v)));
    if (n > hi) fail(fmt::format("\"{}\": {} is more than {}", key, n, hi));
    return n;
  }
  double number(const json::object& o, const char* key) const {
    const json::value* v = o.if_contains(key);
    json::error_code ec;
    const double d = v->to_number<double>(ec);
    if (ec || !(d >= 0)) fail(fmt::format("\"{}\": expected a number of at least 0", key));
    return d;
  }
  template <class T, class Parse>
  T unit(const json::object& o, const char* key, Parse parse, const char* what) const {
    const std::string s = string(o, key);
    try {
      return parse(s);
    } catch (const std::exception& e) {
      fail(fmt::format("\"{}\": \"{}\" is not {} ({})", key, s, what, e.what()));
    }
  }
  template <class E, std::size_t N>
  E choice(const json::object& o, const char* key, const std::array<EnumName<E>, N>& names) const {
    const std::string s = string(o, key);
    std::string all;
    for (const auto& n : names) {
      if (n.name == s) return n.value;
      all += (all.empty() ? "" : ", ") + std::string(n.name);
    }
    fail(fmt::format("\"{}\": \"{}\" is not one of {}", key, s, all));
  }
  void only(const json::object& o, std::initializer_list<const char*> keys) const {
    for (const auto& kv : o) {
      bool known = false;
      for (const char* k : keys)
        known = known || kv.key() == k;
      if (!known) {
        std::string list;
        for (const char* k : keys)
          list += (list.empty() ? "" : ", ") + std::string(k);
        fail(fmt::format("unknown key \"{}\" (this node takes: {})", std::string(kv.key()), list));
      }
    }
  }

 private:
  const std::string& file_;
  std::string where_;
};

// A graph of `n` vertices in an order where each comes after every vertex it waits for
// (`before(v)`: those, by index); vertices on a cycle, or waiting for one, are left out.
// Iterative, for graphs of any depth.
template <class Before>
std::vector<std::size_t> order_of(std::size_t n, Before before) {
  std::vector<std::size_t> waiting(n), order;
  std::vector<std::vector<std::size_t>> after(n);
  for (std::size_t v = 0; v < n; ++v) {
    waiting[v] = before(v).size();
    for (std::size_t u : before(v))
      after[u].push_back(v);
  }
  for (std::size_t v = 0; v < n; ++v)
    if (waiting[v] == 0) order.push_back(v);
  for (std::size_t k = 0; k < order.size(); ++k)
    for (std::size_t w : after[order[k]])
      if (--waiting[w] == 0) order.push_back(w);
  return order;
}

// A cycle of the same graph, vertex by vertex (each waits for the next, the last for the
// first), or none.
template <class Before>
std::optional<std::vector<std::size_t>> cycle_of(std::size_t n, Before before) {
  const std::vector<std::size_t> order = order_of(n, before);
  if (order.size() == n) return std::nullopt;
  // Every vertex left out waits for another left out: walk from one until a vertex comes again.
  std::vector<bool> ordered(n, false);
  for (std::size_t v : order)
    ordered[v] = true;
  std::size_t at = 0;
  while (ordered[at])
    ++at;
  std::vector<std::size_t> seen_at(n, SIZE_MAX), path;
  while (seen_at[at] == SIZE_MAX) {
    seen_at[at] = path.size();
    path.push_back(at);
    for (std::size_t u : before(at))
      if (!ordered[u]) {
        at = u;
        break;
      }
  }
  return std::vector<std::size_t>(path.begin() + static_cast<std::ptrdiff_t>(seen_at[at]),
                                  path.end());
}

}  // namespace

ModelTrace parse_model_trace(const std::string& text, const std::string& name, std::uint32_t gpus,
                             std::uint64_t chunk_size) {
  json::value root;
  try {
    root = config::ConfigDoc::from_text(text, name).root();
  } catch (const config::ConfigError& e) {
    throw ModelTraceError(e.what());
  }
  ModelTrace t;
  const Reader top(name, "the trace");
  const json::object& doc = top.object(root);
  top.only(doc, {"groups", "nodes"});

  // Groups: ordered GPU lists of at least 2, each GPU once.
  if (const json::value* g = doc.if_contains("groups")) {
    const json::object& groups = top.object(*g);
    for (const auto& kv : groups) {
      const std::string gname(kv.key());
      const Reader r(name, fmt::format("group \"{}\"", gname));
      if (gname.empty() || gname[0] == '@')
        r.fail("a group's name may not be empty or start with '@' (podsim names its own so)");
      if (!kv.value().is_array()) r.fail("expected an array of GPUs, got " + kind_of(kv.value()));
      std::vector<std::uint32_t> members;
      std::set<std::uint32_t> seen;
      for (const json::value& m : kv.value().get_array()) {
        json::error_code ec;
        const auto id = m.to_number<std::uint64_t>(ec);
        if (ec || !(m.is_int64() || m.is_uint64())) r.fail("a member is not a GPU number");
        if (id >= gpus) r.fail(fmt::format("GPU {} does not exist (the pod has {})", id, gpus));
        if (!seen.insert(static_cast<std::uint32_t>(id)).second)
          r.fail(fmt::format("GPU {} is listed twice", id));
        members.push_back(static_cast<std::uint32_t>(id));
      }
      if (members.size() < 2) r.fail("a group needs at least 2 GPUs");
      t.groups[gname] = std::move(members);
    }
  }

  // Nodes.
  const json::value* nv = doc.if_contains("nodes");
  if (!nv) top.fail("needs \"nodes\"");
  if (!nv->is_array()) top.fail("\"nodes\": expected an array, got " + kind_of(*nv));
  const json::array& nodes = nv->get_array();
  std::map<std::string, std::size_t> index;
  std::vector<std::vector<std::string>> dep_names(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const Reader at(name, fmt::format("nodes[{}]", i));
    const json::object& o = at.object(nodes[i]);
    ModelNode n;
    n.id = at.string(o, "id");
    if (n.id.empty() || n.id.find_first_of(",\"\n\r") != std::string::npos)
      at.fail("\"id\": \"" + n.id +
              "\" is not an id (one that is not empty, without commas, quotes or line breaks: "
              "model.csv names nodes by it)");
    const Reader r(name, fmt::format("node \"{}\"", n.id));
    if (!index.emplace(n.id, i).second)
      r.fail(fmt::format("the id is used twice (nodes[{}] and nodes[{}])", index[n.id], i));
    n.gpu = static_cast<std::uint32_t>(r.whole(o, "gpu", 1023));
    if (n.gpu >= gpus) r.fail(fmt::format("GPU {} does not exist (the pod has {})", n.gpu, gpus));
    const std::string type = r.string(o, "type");
    if (const json::value* d = o.if_contains("deps")) {
      if (!d->is_array()) r.fail("\"deps\": expected an array of node ids, got " + kind_of(*d));
      for (const json::value& x : d->get_array()) {
        if (!x.is_string()) r.fail("\"deps\": a dependency is not a node id (a string)");
        dep_names[i].emplace_back(x.get_string());
      }
    }
    auto bytes = [&](const char* key) {
      return r.unit<Bytes>(o, key, parse_bytes, "a size").count();
    };
    if (type == "compute") {
      n.type = ModelNode::Type::Compute;
      r.only(o, {"id", "gpu", "type", "deps", "duration", "flops", "bytes"});
      if (o.contains("duration")) {
        if (o.contains("flops") || o.contains("bytes"))
          r.fail("a compute node takes a \"duration\" or work (\"flops\", \"bytes\"), not both");
        n.duration = r.unit<Time>(o, "duration", parse_time, "a time");
      } else {
        if (!o.contains("flops") && !o.contains("bytes"))
          r.fail("a compute node needs a \"duration\", or \"flops\" and/or \"bytes\"");
        if (o.contains("flops")) n.flops = r.number(o, "flops");
        if (o.contains("bytes")) n.memory_bytes = bytes("bytes");
      }
    } else if (type == "collective") {
      n.type = ModelNode::Type::Collective;
      r.only(o, {"id", "gpu", "type", "deps", "op", "group", "bytes", "send_bytes", "algorithm",
                 "root"});
      n.op = r.choice(o, "op", coll::kOpNames);
      n.algorithm = o.contains("algorithm") ? r.choice(o, "algorithm", coll::kAlgorithmNames)
                                            : coll::Algorithm::Ring;
      if ((n.op == coll::Op::AllToAll || n.op == coll::Op::AllToAllV) && !o.contains("algorithm"))
        n.algorithm = coll::Algorithm::OneShot;
      if (const std::string e = coll::invalid(n.op, n.algorithm); !e.empty()) r.fail(e);
      n.group = r.string(o, "group");
      const auto g = t.groups.find(n.group);
      if (g == t.groups.end()) r.fail(fmt::format("no group \"{}\"", n.group));
      if (std::find(g->second.begin(), g->second.end(), n.gpu) == g->second.end())
        r.fail(fmt::format("GPU {} is not a member of group \"{}\"", n.gpu, n.group));
      const auto members = static_cast<std::uint32_t>(g->second.size());
      n.root = g->second[0];
      if (o.contains("root")) {
        if (n.op != coll::Op::Broadcast) r.fail("\"root\" is for broadcast only");
        n.root = static_cast<std::uint32_t>(r.whole(o, "root", 1023));
        if (std::find(g->second.begin(), g->second.end(), n.root) == g->second.end())
          r.fail(fmt::format("\"root\": GPU {} is not a member of group \"{}\"", n.root, n.group));
      }
      if (n.op == coll::Op::AllToAllV) {
        // Its row: what this member sends to each member, in the group's order.
        if (o.contains("bytes"))
          r.fail(
              "all_to_all_v takes \"send_bytes\" (a size per member of its group), not "
              "\"bytes\"");
        const json::value* sb = o.if_contains("send_bytes");
        if (!sb) r.fail("all_to_all_v needs \"send_bytes\": a size per member of its group");
        if (!sb->is_array() || sb->get_array().size() != members)
          r.fail(
              fmt::format("\"send_bytes\": expected {} sizes (one per member of group \"{}\", "
                          "in its order)",
                          members, n.group));
        for (const json::value& x : sb->get_array()) {
          if (!x.is_string()) r.fail("\"send_bytes\": a size is not a string such as \"64KiB\"");
          const std::string text(x.get_string());
          std::uint64_t b = 0;
          try {
            b = parse_bytes(text).count();
          } catch (const std::exception& e) {
            r.fail(fmt::format("\"send_bytes\": \"{}\" is not a size ({})", text, e.what()));
          }
          if (b % 64) r.fail(fmt::format("\"send_bytes\": {} is not a multiple of 64 B", text));
          n.send_bytes.push_back(b);
        }
        std::uint64_t row = 0;
        for (std::uint64_t b : n.send_bytes)
          row += b;
        n.bytes = row;
      } else {
        if (o.contains("send_bytes")) r.fail("\"send_bytes\" is for all_to_all_v only");
        n.bytes = bytes("bytes");
        if (const std::string e = coll::invalid_size(n.op, members, n.bytes); !e.empty()) r.fail(e);
      }
    } else if (type == "send" || type == "recv") {
      n.type = type == "send" ? ModelNode::Type::Send : ModelNode::Type::Recv;
      r.only(o, {"id", "gpu", "type", "deps", "peer", "bytes", "tag"});
      n.peer = static_cast<std::uint32_t>(r.whole(o, "peer", 1023));
      if (n.peer >= gpus) r.fail(fmt::format("peer GPU {} does not exist", n.peer));
      if (n.peer == n.gpu) r.fail("a GPU does not send to itself");
      n.bytes = bytes("bytes");
      if (n.bytes == 0 || n.bytes % 64) r.fail("\"bytes\": must be a positive multiple of 64 B");
      n.tag = o.contains("tag") ? r.whole(o, "tag", UINT64_MAX) : 0;
    } else {
      r.fail(fmt::format("\"type\": \"{}\" is not one of compute, collective, send, recv", type));
    }
    t.nodes.push_back(std::move(n));
  }

  // Dependencies: nodes that exist, on the same GPU, and no cycle.
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const Reader r(name, fmt::format("node \"{}\"", t.nodes[i].id));
    for (const std::string& d : dep_names[i]) {
      const auto it = index.find(d);
      if (it == index.end()) r.fail(fmt::format("depends on \"{}\", which is no node", d));
      if (it->second == i) r.fail("depends on itself");
      if (t.nodes[it->second].gpu != t.nodes[i].gpu)
        r.fail(
            fmt::format("depends on \"{}\" of GPU {}: a node waits only for nodes of its own "
                        "GPU (GPUs wait for each other through collectives and send/recv)",
                        d, t.nodes[it->second].gpu));
      t.nodes[i].deps.push_back(it->second);
    }
  }
  check_model_trace(t, name, chunk_size);
  return t;
}

// What every form of trace must satisfy once its nodes and dependencies are read.
void check_model_trace(const ModelTrace& t, const std::string& name, std::uint64_t chunk_size) {
  // A trace of nothing would run as a workload that did all it was given, in no time.
  if (t.nodes.empty()) throw ModelTraceError(name + ": no nodes in it: nothing to run");
  // A collective's pieces are steps of a program held in memory, as for
  // workload.collective.sizes.
  for (const ModelNode& n : t.nodes) {
    if (n.type != ModelNode::Type::Collective) continue;
    const std::uint64_t largest = n.send_bytes.empty()
                                      ? n.bytes
                                      : *std::max_element(n.send_bytes.begin(), n.send_bytes.end());
    if (largest / chunk_size > (1u << 16))
      throw ModelTraceError(fmt::format(
          "{}: node \"{}\": makes {} pieces of workload.collective.chunk_size ({} B; at most "
          "65536: make chunk_size at least {} B)",
          name, n.id, largest / chunk_size, chunk_size, ((largest >> 16) + 63) / 64 * 64));
  }
  const auto deps_of = [&t](std::size_t i) -> const std::vector<std::size_t>& {
    return t.nodes[i].deps;
  };
  if (const auto cycle = cycle_of(t.nodes.size(), deps_of))
    throw ModelTraceError(fmt::format("{}: node \"{}\": its dependencies make a cycle: {}", name,
                                      t.nodes[cycle->front()].id, [&] {
                                        std::string path;
                                        for (std::size_t i : *cycle)
                                          path += "\"" + t.nodes[i].id + "\" -> ";
                                        return path + "\"" + t.nodes[cycle->front()].id + "\"";
                                      }()));
  // Collectives: the k-th of a group on each member is one call.
  {
    std::map<std::pair<std::string, std::uint32_t>, std::vector<std::size_t>> calls;
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      if (t.nodes[i].type == ModelNode::Type::Collective)
        calls[{t.nodes[i].group, t.nodes[i].gpu}].push_back(i);
    for (const auto& [gname, members] : t.groups) {
      const auto first = calls.find({gname, members[0]});
      const std::vector<std::size_t> none;
      const std::vector<std::size_t>& ref = first == calls.end() ? none : first->second;
      for (std::uint32_t m : members) {
        const auto it = calls.find({gname, m});
        const std::vector<std::size_t>& mine = it == calls.end() ? none : it->second;
        if (mine.size() != ref.size())
          throw ModelTraceError(fmt::format(
              "{}: group \"{}\": GPU {} has {} collective(s) of the group and GPU {} has {}: "
              "every member runs each of the group's calls",
              name, gname, members[0], ref.size(), m, mine.size()));
        for (std::size_t k = 0; k < mine.size(); ++k) {
          const ModelNode& a = t.nodes[ref[k]];
          const ModelNode& b = t.nodes[mine[k]];
          const bool rows = a.op == coll::Op::AllToAllV;  // each member's own sizes
          if (a.op != b.op || (!rows && a.bytes != b.bytes) || a.algorithm != b.algorithm ||
              a.root != b.root)
            throw ModelTraceError(fmt::format(
                "{}: group \"{}\": its collective {} is node \"{}\" on GPU {} and node \"{}\" on "
                "GPU {}, which differ in op, size, algorithm or root",
                name, gname, k + 1, a.id, a.gpu, b.id, b.gpu));
        }
      }
    }
  }

  // Send and receive: the k-th send from a to b with a tag meets the k-th receive.
  {
    using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;  // from, to, tag
    std::map<Key, std::vector<std::size_t>> sends, recvs;
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      const ModelNode& n = t.nodes[i];
      if (n.type == ModelNode::Type::Send) sends[{n.gpu, n.peer, n.tag}].push_back(i);
      if (n.type == ModelNode::Type::Recv) recvs[{n.peer, n.gpu, n.tag}].push_back(i);
    }
    auto unmatched = [&](const std::map<Key, std::vector<std::size_t>>& a,
                         const std::map<Key, std::vector<std::size_t>>& b, const char* what,
                         const char* other) {
      for (const auto& [key, list] : a) {
        const auto it = b.find(key);
        const std::size_t have = it == b.end() ? 0 : it->second.size();
        for (std::size_t k = have; k < list.size(); ++k)
          throw ModelTraceError(
              fmt::format("{}: node \"{}\": a {} with no matching {} (GPU {} to "
                          "GPU {}, tag {})",
                          name, t.nodes[list[k]].id, what, other, std::get<0>(key),
                          std::get<1>(key), std::get<2>(key)));
        for (std::size_t k = 0; k < std::min(have, list.size()); ++k)
          if (t.nodes[list[k]].bytes != t.nodes[it->second[k]].bytes)
            throw ModelTraceError(fmt::format(
                "{}: node \"{}\": sends {} B but \"{}\" receives {} B", name, t.nodes[list[k]].id,
                t.nodes[list[k]].bytes, t.nodes[it->second[k]].id, t.nodes[it->second[k]].bytes));
      }
    };
    unmatched(sends, recvs, "send", "receive");
    unmatched(recvs, sends, "receive", "send");
  }

  // No node waits for itself through calls: a call runs once every member reaches it (it is
  // one vertex for all of them), and a group's calls run in their order on each member (call
  // k before call k + 1). A cycle of dependencies and call orders would hang the run.
  {
    std::vector<std::size_t> vertex(t.nodes.size());
    std::vector<std::size_t> first_node;       // by vertex: a node of it, for messages
    std::vector<std::vector<std::size_t>> in;  // by vertex: the vertices it waits for
    using Key = std::tuple<std::string, std::uint32_t, std::uint32_t, std::uint64_t>;
    struct Calls {
      std::size_t count = 0, last = 0;  // a member's calls of a key so far, the last's vertex
    };
    std::map<std::pair<Key, std::uint32_t>, Calls> member;  // (call key, gpu)
    std::map<std::pair<Key, std::size_t>, std::size_t> call_vertex;
    auto add = [&](std::size_t i) {
      first_node.push_back(i);
      in.emplace_back();
      return first_node.size() - 1;
    };
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      const ModelNode& m = t.nodes[i];
      if (m.type == ModelNode::Type::Compute) {
        vertex[i] = add(i);
        continue;
      }
      const Key key = m.type == ModelNode::Type::Collective ? Key{m.group, 0, 0, 0}
                      : m.type == ModelNode::Type::Send     ? Key{"", m.gpu, m.peer, m.tag}
                                                            : Key{"", m.peer, m.gpu, m.tag};
      Calls& mine = member[{key, m.gpu}];
      const auto it = call_vertex.find({key, mine.count});
      vertex[i] = it != call_vertex.end() ? it->second : call_vertex[{key, mine.count}] = add(i);
      if (mine.count++ > 0) in[vertex[i]].push_back(mine.last);
      mine.last = vertex[i];
    }
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      for (std::size_t d : t.nodes[i].deps)
        if (vertex[d] != vertex[i]) in[vertex[i]].push_back(vertex[d]);
    if (auto cycle = cycle_of(
            in.size(), [&in](std::size_t x) -> const std::vector<std::size_t>& { return in[x]; })) {
      std::reverse(cycle->begin(), cycle->end());  // each waits for the one before it
      auto say = [&](std::size_t x) {
        const ModelNode& m = t.nodes[first_node[x]];
        const std::string what = m.type == ModelNode::Type::Compute ? ""
                                 : m.type == ModelNode::Type::Collective
                                     ? " (a call of group \"" + m.group + "\")"
                                     : " (a send or receive)";
        return "\"" + m.id + "\"" + what;
      };
      std::string chain;
      for (std::size_t x : *cycle)
        chain += say(x) + " -> ";
      throw ModelTraceError(fmt::format(
          "{}: node \"{}\": waits for itself through dependencies and the order of calls (a "
          "group's calls run in their order on each member, a call once every member reaches "
          "it): {}{}",
          name, t.nodes[first_node[cycle->front()]].id, chain, say(cycle->front())));
    }
  }
}

ModelTrace load_model_trace(const std::string& path, std::uint32_t gpus, std::uint64_t chunk_size,
                            const std::string& groups) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec) && is_chakra_trace(path))
    return load_chakra_trace(path, gpus, chunk_size, groups);
  if (!groups.empty())
    throw ModelTraceError(path +
                          ": workload.model_groups is for Chakra traces (PREFIX.0.et, ...); a "
                          "JSON trace names its groups itself");
  if (path.size() > 3 && path.ends_with(".et"))
    throw ModelTraceError(path +
                          ": name a Chakra trace by its prefix (PREFIX for PREFIX.0.et, "
                          "PREFIX.1.et, ...)");
  if (std::filesystem::is_directory(path, ec))
    throw ModelTraceError(path + ": is a directory, not a model trace");
  // A JSON trace is text, and at most 1 GiB (/dev/zero or /dev/urandom is not read on until
  // memory runs out); opened once (a FIFO is read as it comes).
  std::string text;
  try {
    text = read_text_file(path, std::size_t{1} << 30);
  } catch (const std::runtime_error& e) {
    if (!std::filesystem::exists(path, ec))
      throw ModelTraceError(path +
                            ": cannot open the model trace (a JSON file, or the prefix of "
                            "a Chakra trace's PREFIX.0.et, PREFIX.1.et, ...)");
    throw ModelTraceError(std::string(e.what()) + ": not a JSON model trace");
  }
  return parse_model_trace(text, path, gpus, chunk_size);
}

std::optional<Time> ModelTrace::critical_path() const {
  for (const ModelNode& n : nodes)
    if (n.type != ModelNode::Type::Compute || !n.duration) return std::nullopt;
  std::vector<Time> finish(nodes.size());
  Time longest;
  for (std::size_t i : order_of(
           nodes.size(),
           [this](std::size_t i) -> const std::vector<std::size_t>& { return nodes[i].deps; })) {
    Time start;
    for (std::size_t d : nodes[i].deps)
      start = std::max(start, finish[d]);
    finish[i] = start + *nodes[i].duration;
    longest = std::max(longest, finish[i]);
  }
  return longest;
}

}  // namespace podsim
