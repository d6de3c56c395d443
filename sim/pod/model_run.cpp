#include "sim/pod/model_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "sim/core/byte_io.hpp"

namespace podsim {

ModelRun::ModelRun(const PodConfig& cfg, ModelTrace trace)
    : trace_(std::move(trace)),
      makespan_(stats_, "makespan", "ns",
                "from the first node's start to the last node's end, every GPU",
                [this] { return makespan().as_ns(); }) {
  const CollectiveConfig& k = cfg.workload.collective;
  comm_.resize(trace_.nodes.size());
  records_.resize(trace_.nodes.size());
  // A collective group's calls: its first member's collectives, in trace order (the reader
  // checked that every member lists the same ones); an all_to_all_v's sizes are every member's
  // row of its k-th call.
  for (const auto& [name, members] : trace_.groups) {
    std::map<std::uint32_t, std::vector<std::size_t>> mine;  // by member: its nodes of the group
    for (std::size_t i = 0; i < trace_.nodes.size(); ++i) {
      const ModelNode& n = trace_.nodes[i];
      if (n.type == ModelNode::Type::Collective && n.group == name) mine[n.gpu].push_back(i);
    }
    if (mine.empty()) continue;
    std::vector<coll::Shape> calls;
    const std::vector<std::size_t>& first = mine[members[0]];
    for (std::size_t c = 0; c < first.size(); ++c) {
      const ModelNode& n = trace_.nodes[first[c]];
      coll::Shape s;
      s.op = n.op;
      s.alg = n.algorithm;
      s.n = static_cast<std::uint32_t>(members.size());
      s.bytes = n.bytes;
      s.piece = k.chunk_size.count();
      s.root = static_cast<std::uint32_t>(std::find(members.begin(), members.end(), n.root) -
                                          members.begin());
      if (n.op == coll::Op::AllToAllV) {
        s.bytes = 0;  // as workload.collective reports it: the most a member sends
        for (std::uint32_t m : members) {
          const ModelNode& row = trace_.nodes[mine[m][c]];
          s.blocks.insert(s.blocks.end(), row.send_bytes.begin(), row.send_bytes.end());
          s.bytes = std::max(s.bytes, row.bytes);
        }
      }
      calls.push_back(s);
    }
    const std::size_t g = groups_.size();
    groups_.push_back(std::make_unique<CollectiveRun>(cfg, name, members, calls, false));
    for (const auto& [gpu, list] : mine)
      for (std::size_t c = 0; c < list.size(); ++c)
        comm_[list[c]] = Comm{g, c};
  }
  // Sends: a group of two per sender, receiver and tag, its calls the sends in trace order
  // (named with '@', which a trace's own groups may not start with).
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>;
  std::map<Key, std::vector<std::size_t>> sends, recvs;
  for (std::size_t i = 0; i < trace_.nodes.size(); ++i) {
    const ModelNode& n = trace_.nodes[i];
    if (n.type == ModelNode::Type::Send) sends[{n.gpu, n.peer, n.tag}].push_back(i);
    if (n.type == ModelNode::Type::Recv) recvs[{n.peer, n.gpu, n.tag}].push_back(i);
  }
  for (const auto& [key, list] : sends) {
    const auto [from, to, tag] = key;
    std::vector<coll::Shape> calls;
    for (std::size_t i : list) {
      coll::Shape s;
      s.op = coll::Op::Broadcast;
      s.alg = coll::Algorithm::OneShot;
      s.n = 2;
      s.bytes = trace_.nodes[i].bytes;
      s.root = 0;
      calls.push_back(s);
    }
    const std::size_t g = groups_.size();
    groups_.push_back(
        std::make_unique<CollectiveRun>(cfg, fmt::format("@p2p.{}.{}.{}", from, to, tag),
                                        std::vector<std::uint32_t>{from, to}, calls, true));
    for (std::size_t c = 0; c < list.size(); ++c) {
      comm_[list[c]] = Comm{g, c};
      comm_[recvs.at(key)[c]] = Comm{g, c};
    }
  }
}

std::vector<Step> ModelRun::steps() const {
  std::vector<Step> setup;
  for (const auto& g : groups_)
    g->setup_steps(setup);
  std::set<std::uint32_t> gpus;
  for (const ModelNode& n : trace_.nodes)
    gpus.insert(n.gpu);
  std::vector<Step> steps;
  for (std::uint32_t g : gpus) {
    for (const Step& s : setup)
      if (s.common.gpu == g) steps.push_back(s);
    steps.push_back(make_step(g, BarrierStep{"mapped"}));
    steps.push_back(make_step(g, ModelStep{}));
  }
  return steps;
}

void ModelRun::note(std::size_t node, Time start, Time end) {
  records_[node] = Record{true, start, end};
}

void ModelRun::pack(ByteWriter& out) const {
  std::uint64_t ran = 0;
  for (const Record& r : records_)
    ran += r.ran;
  out.put(ran);
  for (std::size_t i = 0; i < records_.size(); ++i)
    if (records_[i].ran) {
      out.put(static_cast<std::uint64_t>(i));
      out.put(records_[i].start.as_ps());
      out.put(records_[i].end.as_ps());
    }
}

void ModelRun::merge(ByteReader& in) {
  const auto n = in.get<std::uint64_t>();
  for (std::uint64_t k = 0; k < n; ++k) {
    const auto i = in.get<std::uint64_t>();
    const Time start = Time::ps(in.get<std::int64_t>());
    const Time end = Time::ps(in.get<std::int64_t>());
    if (i >= records_.size())
      throw std::runtime_error("partitioned run: a model node there is not");
    records_[i] = Record{true, start, end};
  }
}

Time ModelRun::makespan() const {
  Time first = Time::max(), last;
  for (const Record& r : records_)
    if (r.ran) {
      first = std::min(first, r.start);
      last = std::max(last, r.end);
    }
  return first == Time::max() ? Time{} : last - first;
}

std::string ModelRun::csv() const {
  std::string out = "id,gpu,type,start_ns,end_ns\n";
  static const char* kType[] = {"compute", "collective", "send", "recv"};
  for (std::size_t i = 0; i < trace_.nodes.size(); ++i) {
    const Record& r = records_[i];
    if (!r.ran) continue;
    const ModelNode& n = trace_.nodes[i];
    out += fmt::format("{},{},{},{:.3f},{:.3f}\n", n.id, n.gpu, kType[static_cast<int>(n.type)],
                       r.start.as_ns(), r.end.as_ns());
  }
  return out;
}

}  // namespace podsim
