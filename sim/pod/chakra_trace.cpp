#include "sim/pod/chakra_trace.hpp"

#include <fmt/format.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <boost/json.hpp>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

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
  RankReader(std::string file, std::uint32_t rank, const std::string& bytes)
      : file_(std::move(file)), rank_(rank), bytes_(bytes) {}

  [[noreturn]] void fail(const pb::Node& n, const std::string& what) const {
    throw ModelTraceError(fmt::format("{}: node {}{}: {}", file_, n.id(),
                                      n.name().empty() ? "" : " \"" + n.name() + "\"", what));
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ModelTraceError(fmt::format("{}: {}", file_, what));
  }

  const pb::Attribute* find(const pb::Node& n, const char* name) const {
    const pb::Attribute* found = nullptr;
    for (const pb::Attribute& a : n.attr())
      if (a.name() == name) {
        if (found) fail(n, fmt::format("attribute {} is given twice", name));
        found = &a;
      }
    return found;
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
        if (!(d >= 0) || !(d < 18446744073709551616.0) || d != std::floor(d))
          fail(n,
               fmt::format("attribute {}: {} is not a whole number from 0 to 2^64 - 1", name, d));
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
  // comm_size: bytes, with room to round up.
  std::uint64_t size(const pb::Node& n) const {
    const std::uint64_t b = needs(n, "comm_size");
    if (b > (std::uint64_t{1} << 50))
      fail(n, fmt::format("attribute comm_size: {} B is more than 2^50 B", b));
    return b;
  }
  std::optional<std::string> text(const pb::Node& n, const char* name) const {
    const pb::Attribute* a = find(n, name);
    if (!a) return std::nullopt;
    if (a->value_case() == pb::Attribute::kStringVal) return a->string_val();
    return std::to_string(*whole(n, name));  // ASTRA-sim names groups by numbers
  }
  double number(const pb::Node& n, const char* name) const {
    const pb::Attribute* a = find(n, name);
    if (a && (a->value_case() == pb::Attribute::kDoubleVal ||
              a->value_case() == pb::Attribute::kFloatVal)) {
      const double d =
          a->value_case() == pb::Attribute::kDoubleVal ? a->double_val() : a->float_val();
      if (!(d >= 0) || !std::isfinite(d))
        fail(n, fmt::format("attribute {}: {} is not a finite number of at least 0", name, d));
      return d;
    }
    const auto v = whole(n, name);
    return v ? static_cast<double>(*v) : 0.0;
  }

  // Reads the file: the metadata first, then every node.
  std::vector<pb::Node> read() const {
    if (bytes_.size() > static_cast<std::size_t>(INT_MAX)) fail("is more than 2 GiB");
    const auto size = static_cast<std::int64_t>(bytes_.size());
    google::protobuf::io::ArrayInputStream stream(bytes_.data(), static_cast<int>(size));
    // One length-delimited message: false at the file's end, where the next would start.
    auto next = [&](google::protobuf::MessageLite& m, const char* what) {
      const std::int64_t at = stream.ByteCount();
      google::protobuf::io::CodedInputStream coded(&stream);
      std::uint64_t length = 0;
      if (!coded.ReadVarint64(&length)) {
        if (coded.CurrentPosition() == 0 && at == size) return false;
        fail(fmt::format("byte {}: a {}'s length is cut short or malformed", at, what));
      }
      if (length > static_cast<std::uint64_t>(size - at - coded.CurrentPosition()))
        fail(fmt::format("byte {}: a {} of {} bytes, more than the file holds after it", at, what,
                         length));
      const auto limit = coded.PushLimit(static_cast<int>(length));
      if (!m.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
        fail(fmt::format("byte {}: a malformed {} of {} bytes", at, what, length));
      coded.PopLimit(limit);
      return true;
    };
    pb::GlobalMetadata meta;
    if (!next(meta, "GlobalMetadata"))
      fail("is empty (a Chakra trace starts with its GlobalMetadata)");
    std::vector<pb::Node> nodes;
    for (pb::Node n; next(n, "node"); n.Clear())
      nodes.push_back(std::move(n));
    return nodes;
  }

  std::uint32_t rank() const { return rank_; }

 private:
  std::string file_;
  std::uint32_t rank_;
  const std::string& bytes_;
};

// ASTRA-sim's communicator groups: {"1": [0, 1, 2, 3], ...}.
std::map<std::string, std::vector<std::uint32_t>> read_groups(const std::string& text,
                                                              const std::string& path,
                                                              std::uint32_t ranks) {
  std::map<std::string, std::vector<std::uint32_t>> groups;
  boost::json::value root;
  try {
    root = config::ConfigDoc::from_text(text, path).root();
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
    if (name.empty() || name[0] == '@')
      fail("a group's name may not be empty or start with '@' (podsim names its own so)");
    if (!kv.value().is_array()) fail("expected an array of ranks");
    std::set<std::uint32_t> seen;
    std::vector<std::uint32_t>& members = groups[name];
    for (const boost::json::value& m : kv.value().get_array()) {
      if (!(m.is_uint64() || (m.is_int64() && m.get_int64() >= 0)))
        fail("a member is not a rank number");
      const std::uint64_t r =
          m.is_uint64() ? m.get_uint64() : static_cast<std::uint64_t>(m.get_int64());
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
        m.group = "@all";
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
      m.root = members[0];  // a broadcast's: Chakra names none
      // The size as workload.collective.sizes counts it, rounded up to what the algorithm
      // splits: 64 B lines (all_to_all: 64 B x the members).
      const std::uint64_t line =
          m.op == coll::Op::AllToAll ? 64 * static_cast<std::uint64_t>(members.size()) : 64;
      m.bytes = round_up(f.size(n), line);
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
      m.bytes = round_up(f.size(n), 64);
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
  std::uint32_t ranks = 0;
  std::error_code ec;
  while (ranks <= (1u << 20) && fs::exists(rank_file(prefix, ranks), ec))
    ++ranks;
  if (ranks == 0) throw ModelTraceError(rank_file(prefix, 0) + ": no such file");
  if (ranks > gpus)
    throw ModelTraceError(
        fmt::format("{}: the trace has {} ranks and the pod {} GPUs (rank r runs on GPU r)",
                    rank_file(prefix, ranks - 1), ranks, gpus));
  // A file for a later rank past a missing one would be left out: refused.
  {
    const fs::path p(prefix);
    const std::string stem = p.filename().string() + ".";
    for (const auto& e :
         fs::directory_iterator(p.parent_path().empty() ? "." : p.parent_path(), ec)) {
      const std::string f = e.path().filename().string();
      if (f.size() <= stem.size() + 3 || f.compare(0, stem.size(), stem) != 0 ||
          !f.ends_with(".et"))
        continue;
      const std::string num = f.substr(stem.size(), f.size() - stem.size() - 3);
      if (num.empty() || num.size() > 9 || (num.size() > 1 && num[0] == '0') ||
          num.find_first_not_of("0123456789") != std::string::npos)
        continue;  // not a rank's file (PREFIX.R.et, R without leading zeros)
      if (const auto r = std::stoul(num); r >= ranks)
        throw ModelTraceError(
            fmt::format("{}: the trace has a file for rank {} but none for rank {}",
                        e.path().string(), r, ranks));
    }
  }
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw ModelTraceError(path + ": cannot open it");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw ModelTraceError(path + ": cannot read it");
    return text.str();
  };
  std::vector<std::string> files;
  for (std::uint32_t r = 0; r < ranks; ++r)
    files.push_back(slurp(rank_file(prefix, r)));
  return parse_chakra_trace(files, prefix, gpus, chunk_size,
                            groups_path.empty() ? "" : slurp(groups_path), groups_path);
}

ModelTrace parse_chakra_trace(const std::vector<std::string>& files, const std::string& prefix,
                              std::uint32_t gpus, std::uint64_t chunk_size,
                              const std::string& groups_text, const std::string& groups_name) {
  GOOGLE_PROTOBUF_VERIFY_VERSION;
  const auto ranks = static_cast<std::uint32_t>(files.size());
  if (ranks == 0 || ranks > gpus)
    throw ModelTraceError(
        fmt::format("{}: a trace of {} ranks for a pod of {} GPUs", prefix, ranks, gpus));
  const auto groups = groups_name.empty() ? std::map<std::string, std::vector<std::uint32_t>>{}
                                          : read_groups(groups_text, groups_name, ranks);

  ModelTrace t;
  for (std::uint32_t r = 0; r < ranks; ++r) {
    const RankReader f(rank_file(prefix, r), r, files[r]);
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
