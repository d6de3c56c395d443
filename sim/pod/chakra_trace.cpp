#include "sim/pod/chakra_trace.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/util/delimited_message_util.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>

#include "sim/core/config_io.hpp"
#include "sim/pod/chakra_et.pb.h"

namespace podsim {

namespace {

namespace pb = podsim::chakra;
namespace fs = std::filesystem;

std::string rank_file(const std::string& prefix, std::uint32_t r) {
  return fmt::format("{}.{}.et", prefix, r);
}

std::uint64_t round_up(std::uint64_t v, std::uint64_t to) {
  return std::max(to, (v + to - 1) / to * to);
}

// One rank's file: its nodes, each error naming the file and the node.
class RankReader {
 public:
  RankReader(std::string file, std::uint32_t rank) : file_(std::move(file)), rank_(rank) {}

  [[noreturn]] void fail(const pb::Node& n, const std::string& what) const {
    throw ModelTraceError(fmt::format("{}: node {}{}: {}", file_, n.id(),
                                      n.name().empty() ? "" : " \"" + n.name() + "\"", what));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelTraceError(fmt::format("{}: {}", file_, what));
  }

  static const pb::Attribute* find(const pb::Node& n, const char* name) {
    for (const pb::Attribute& a : n.attr())
      if (a.name() == name) return &a;
    return nullptr;
  }
  // A whole number of at least 0, whichever of Chakra's number types holds it.
  std::optional<std::uint64_t> whole(const pb::Node& n, const char* name) const {
    const pb::Attribute* a = find(n, name);
    if (!a) return std::nullopt;
    using V = pb::Attribute;
    std::int64_t s = 0;
    switch (a->value_case()) {
      case V::kUint64Val: return a->uint64_val();
      case V::kFixed64Val: return a->fixed64_val();
      case V::kUint32Val: return a->uint32_val();
      case V::kFixed32Val: return a->fixed32_val();
      case V::kInt64Val: s = a->int64_val(); break;
      case V::kInt32Val: s = a->int32_val(); break;
      case V::kSint64Val: s = a->sint64_val(); break;
      case V::kSint32Val: s = a->sint32_val(); break;
      case V::kSfixed64Val: s = a->sfixed64_val(); break;
      case V::kSfixed32Val: s = a->sfixed32_val(); break;
      case V::kDoubleVal:
      case V::kFloatVal: {
        const double d = a->value_case() == V::kDoubleVal ? a->double_val() : a->float_val();
        if (!(d >= 0) || d != static_cast<double>(static_cast<std::uint64_t>(d)))
          fail(n, fmt::format("attribute {}: {} is not a whole number of at least 0", name, d));
        return static_cast<std::uint64_t>(d);
      }
      default: fail(n, fmt::format("attribute {}: expected a number", name));
    }
    if (s < 0) fail(n, fmt::format("attribute {}: {} is below 0", name, s));
    return static_cast<std::uint64_t>(s);
  }
  std::uint64_t needs(const pb::Node& n, const char* name) const {
    const auto v = whole(n, name);
    if (!v) fail(n, fmt::format("needs attribute {}", name));
    return *v;
  }
  std::optional<std::string> text(const pb::Node& n, const char* name) const {
    const pb::Attribute* a = find(n, name);
    if (!a) return std::nullopt;
    if (a->value_case() == pb::Attribute::kStringVal) return a->string_val();
    return std::to_string(*whole(n, name));  // ASTRA-sim names groups by numbers
  }
  double number(const pb::Node& n, const char* name) const {
    const pb::Attribute* a = find(n, name);
    if (a && a->value_case() == pb::Attribute::kDoubleVal && a->double_val() >= 0)
      return a->double_val();
    if (a && a->value_case() == pb::Attribute::kFloatVal && a->float_val() >= 0)
      return a->float_val();
    const auto v = whole(n, name);
    return v ? static_cast<double>(*v) : 0.0;
  }

  // Reads the file: the metadata first, then every node.
  std::vector<pb::Node> read() const {
    std::error_code ec;
    const auto size = static_cast<std::int64_t>(fs::file_size(file_, ec));
    std::ifstream in(file_, std::ios::binary);
    if (ec || !in) fail("cannot open it");
    google::protobuf::io::IstreamInputStream stream(&in);
    // A message read whole, or none because the file ends where it would start.
    auto next = [&](google::protobuf::MessageLite& m) {
      bool clean_end = false;
      if (google::protobuf::util::ParseDelimitedFromZeroCopyStream(&m, &stream, &clean_end))
        return true;
      at_end_ = clean_end && stream.ByteCount() == size;
      return false;
    };
    pb::GlobalMetadata meta;
    if (!next(meta))
      fail(at_end_ ? "is empty (a Chakra trace starts with its GlobalMetadata)"
                   : "is not a Chakra trace (its first message is no GlobalMetadata)");
    std::vector<pb::Node> nodes;
    for (;;) {
      const auto at = stream.ByteCount();
      pb::Node n;
      if (!next(n)) {
        if (at_end_) break;
        fail(fmt::format("byte {}: a malformed node (after {} nodes)", at, nodes.size()));
      }
      nodes.push_back(std::move(n));
    }
    if (in.bad()) fail("cannot read it");
    return nodes;
  }

  const std::string& file() const { return file_; }
  std::uint32_t rank() const { return rank_; }

 private:
  std::string file_;
  std::uint32_t rank_;
  mutable bool at_end_ = false;
};

// ASTRA-sim's communicator groups: {"1": [0, 1, 2, 3], ...}.
std::map<std::string, std::vector<std::uint32_t>> read_groups(const std::string& path,
                                                              std::uint32_t ranks) {
  std::map<std::string, std::vector<std::uint32_t>> groups;
  boost::json::value root;
  try {
    root = config::ConfigDoc::from_file(path).root();
  } catch (const config::ConfigError& e) {
    throw ModelTraceError(e.what());
  }
  if (!root.is_object())
    throw ModelTraceError(path + ": expected an object of groups, {\"1\": [0, 1, 2, 3], ...}");
  for (const auto& kv : root.get_object()) {
    const std::string name(kv.key());
    auto fail = [&](const std::string& what) {
      throw ModelTraceError(fmt::format("{}: group \"{}\": {}", path, name, what));
    };
    if (!kv.value().is_array()) fail("expected an array of ranks");
    std::set<std::uint32_t> seen;
    std::vector<std::uint32_t>& members = groups[name];
    for (const boost::json::value& m : kv.value().get_array()) {
      if (!(m.is_int64() || m.is_uint64()) || m.to_number<std::int64_t>() < 0)
        fail("a member is not a rank number");
      const auto r = m.to_number<std::uint64_t>();
      if (r >= ranks)
        fail(fmt::format("rank {} does not exist (the trace has {} ranks)", r, ranks));
      if (!seen.insert(static_cast<std::uint32_t>(r)).second)
        fail(fmt::format("rank {} is listed twice", r));
      members.push_back(static_cast<std::uint32_t>(r));
    }
  }
  return groups;
}

// The node of rank `r`'s file, in podsim's terms.
void convert(const RankReader& f, const pb::Node& n, ModelNode& m,
             const std::map<std::string, std::vector<std::uint32_t>>& groups, ModelTrace& t,
             std::uint32_t ranks) {
  switch (n.type()) {
    case pb::COMP_NODE: {
      m.type = ModelNode::Type::Compute;
      // A measured duration when there is one, else the work at the GPU's rates.
      if (n.duration_micros() > 0) {
        if (n.duration_micros() > 1'000'000'000'000ULL)
          f.fail(n, fmt::format("duration_micros {} is more than 10^12 us", n.duration_micros()));
        m.duration = Time::us(static_cast<std::int64_t>(n.duration_micros()));
      } else {
        m.flops = f.number(n, "num_ops");
        m.memory_bytes = f.whole(n, "tensor_size").value_or(0);
        if (m.flops == 0 && m.memory_bytes == 0) m.duration = Time{};
      }
      return;
    }
    case pb::METADATA_NODE:
    case pb::INVALID_NODE:
      // Nothing to do; it still orders what depends on it.
      m.type = ModelNode::Type::Compute;
      m.duration = Time{};
      return;
    case pb::COMM_COLL_NODE: {
      m.type = ModelNode::Type::Collective;
      const std::uint64_t type = f.needs(n, "comm_type");
      switch (type) {
        case pb::ALL_REDUCE: m.op = coll::Op::AllReduce; break;
        case pb::ALL_GATHER: m.op = coll::Op::AllGather; break;
        case pb::REDUCE_SCATTER: m.op = coll::Op::ReduceScatter; break;
        case pb::ALL_TO_ALL: m.op = coll::Op::AllToAll; break;
        case pb::BROADCAST: m.op = coll::Op::Broadcast; break;
        default: {
          const bool known = type <= pb::CollectiveCommType_MAX;
          f.fail(n, fmt::format("comm_type {}{} is not one podsim runs (ALL_REDUCE, ALL_GATHER, "
                                "REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)",
                                type,
                                known ? " (" +
                                            pb::CollectiveCommType_Name(
                                                static_cast<pb::CollectiveCommType>(type)) +
                                            ")"
                                      : ""));
        }
      }
      m.algorithm = m.op == coll::Op::AllToAll ? coll::Algorithm::OneShot : coll::Algorithm::Ring;
      if (const auto alg = f.text(n, "algorithm")) {  // podsim's own attribute
        const auto it = std::find_if(coll::kAlgorithmNames.begin(), coll::kAlgorithmNames.end(),
                                     [&](const auto& e) { return e.name == *alg; });
        if (it == coll::kAlgorithmNames.end())
          f.fail(n, fmt::format("attribute algorithm: \"{}\" is not one of ring, one_shot, "
                                "two_shot",
                                *alg));
        m.algorithm = it->value;
      }
      if (const std::string e = coll::invalid(m.op, m.algorithm); !e.empty()) f.fail(n, e);
      // pg_name: a group of the groups file; none (or "0"): every rank, as in ASTRA-sim.
      const std::string pg = f.text(n, "pg_name").value_or("");
      std::vector<std::uint32_t> members;
      if (pg.empty() || pg == "0") {
        m.group = "all";
        for (std::uint32_t r = 0; r < ranks; ++r)
          members.push_back(r);
      } else {
        const auto g = groups.find(pg);
        if (g == groups.end())
          f.fail(n, fmt::format("pg_name \"{}\" is no group{}", pg,
                                groups.empty() ? " (name the groups file: workload.model_groups)"
                                               : " of workload.model_groups"));
        m.group = pg;
        members = g->second;
      }
      if (members.size() < 2)
        f.fail(n, fmt::format("a collective over group \"{}\" of {} rank(s): it needs 2 or more",
                              m.group, members.size()));
      if (std::find(members.begin(), members.end(), f.rank()) == members.end())
        f.fail(n, fmt::format("rank {} is not a member of group \"{}\"", f.rank(), m.group));
      t.groups.emplace(m.group, members);
      // The size as workload.collective.sizes counts it, rounded up to what the algorithm
      // splits: 64 B lines (all_to_all: 64 B x the members).
      const std::uint64_t line =
          m.op == coll::Op::AllToAll ? 64 * static_cast<std::uint64_t>(members.size()) : 64;
      m.bytes = round_up(f.needs(n, "comm_size"), line);
      return;
    }
    case pb::COMM_SEND_NODE:
    case pb::COMM_RECV_NODE: {
      const bool send = n.type() == pb::COMM_SEND_NODE;
      m.type = send ? ModelNode::Type::Send : ModelNode::Type::Recv;
      const char* self = send ? "comm_src" : "comm_dst";
      const char* other = send ? "comm_dst" : "comm_src";
      if (const auto me = f.whole(n, self); me && *me != f.rank())
        f.fail(n, fmt::format("{} is {}, but this is rank {}'s file", self, *me, f.rank()));
      const std::uint64_t peer = f.needs(n, other);
      if (peer >= ranks)
        f.fail(n, fmt::format("{} {} does not exist (the trace has {} ranks)", other, peer, ranks));
      if (peer == f.rank()) f.fail(n, "a rank does not send to itself");
      m.peer = static_cast<std::uint32_t>(peer);
      m.bytes = round_up(f.needs(n, "comm_size"), 64);
      m.tag = f.whole(n, "comm_tag").value_or(0);
      return;
    }
    default:
      f.fail(n, fmt::format("node type {} is not one podsim runs (COMP_NODE, COMM_COLL_NODE, "
                            "COMM_SEND_NODE, COMM_RECV_NODE; METADATA_NODE and INVALID_NODE "
                            "take no time)",
                            pb::NodeType_IsValid(n.type()) ? pb::NodeType_Name(n.type())
                                                           : std::to_string(n.type())));
  }
}

}  // namespace

bool is_chakra_trace(const std::string& prefix) {
  std::error_code ec;
  return fs::is_regular_file(rank_file(prefix, 0), ec);
}

ModelTrace load_chakra_trace(const std::string& prefix, std::uint32_t gpus,
                             std::uint64_t chunk_size, const std::string& groups_path) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  std::uint32_t ranks = 0;
  std::error_code ec;
  while (ranks <= gpus && fs::exists(rank_file(prefix, ranks), ec))
    ++ranks;
  if (ranks == 0) throw ModelTraceError(rank_file(prefix, 0) + ": no such file");
  if (ranks > gpus)
    throw ModelTraceError(fmt::format(
        "{}: the trace has a file for rank {} and the pod {} GPUs (rank r runs on GPU r)",
        rank_file(prefix, ranks - 1), ranks - 1, gpus));
  const auto groups = groups_path.empty() ? std::map<std::string, std::vector<std::uint32_t>>{}
                                          : read_groups(groups_path, ranks);

  ModelTrace t;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const RankReader f(rank_file(prefix, r), r);
    const std::vector<pb::Node> nodes = f.read();
    const std::size_t first = t.nodes.size();
    std::map<std::uint64_t, std::size_t> index;  // Chakra id -> node of t
    for (const pb::Node& n : nodes) {
      if (!index.emplace(n.id(), t.nodes.size()).second) f.fail(n, "the id is used twice");
      ModelNode m;
      m.id = fmt::format("{}:{}", r, n.id());
      m.gpu = r;
      convert(f, n, m, groups, t, ranks);
      t.nodes.push_back(std::move(m));
    }
    // Dependencies, data and control alike, within the rank.
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const pb::Node& n = nodes[i];
      std::set<std::size_t> deps;
      for (const auto* list : {&n.data_deps(), &n.ctrl_deps()})
        for (std::uint64_t d : *list) {
          const auto it = index.find(d);
          if (it == index.end()) f.fail(n, fmt::format("depends on node {}, which is no node", d));
          if (it->second == first + i) f.fail(n, "depends on itself");
          deps.insert(it->second);
        }
      t.nodes[first + i].deps.assign(deps.begin(), deps.end());
    }
  }
  check_model_trace(t, prefix, chunk_size);
  return t;
}

}  // namespace podsim
