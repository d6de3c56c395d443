// workload.kind = model: a model trace's groups (its collectives' and its sends'), the steps
// that set their windows up, which call of which group each communication node is, and what
// each node did (docs/model-traces.md).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/pod/collective_run.hpp"
#include "sim/pod/model_trace.hpp"

namespace podsim {

class ModelRun {
 public:
  ModelRun(const PodConfig& cfg, ModelTrace trace);

  // Every group's setup, then on each GPU with nodes a barrier and its model step.
  std::vector<Step> steps() const;

  const ModelTrace& trace() const { return trace_; }
  // A communication node's group, and which of the group's calls it is.
  struct Comm {
    std::size_t group = 0;
    std::size_t call = 0;
  };
  const Comm& comm(std::size_t node) const { return comm_[node]; }
  CollectiveRun& group(std::size_t g) { return *groups_[g]; }
  std::size_t groups() const { return groups_.size(); }

  // Node `i` ran from start to end.
  void note(std::size_t node, Time start, Time end);
  // A split run: the nodes this rank ran (pack), recorded on rank 0 (merge).
  void pack(ByteWriter& out) const;
  void merge(ByteReader& in);
  // model.csv: a row per node that ran (id, gpu, type, start_ns, end_ns), in trace order.
  std::string csv() const;
  // The last node's end less the first one's start (0: none ran).
  Time makespan() const;
  const StatGroup& stats() const { return stats_; }

 private:
  ModelTrace trace_;
  std::vector<std::unique_ptr<CollectiveRun>> groups_;
  std::vector<Comm> comm_;  // by node (compute nodes: unused)
  struct Record {
    bool ran = false;
    Time start, end;
  };
  std::vector<Record> records_;
  StatGroup stats_{"model"};
  Formula makespan_;
};

}  // namespace podsim
