// workload.kind = collective: the collective's participants, its programs at each size, the
// steps that export, import and map their windows, and the results (docs/collectives.md).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/compute/collective.hpp"
#include "sim/core/stats.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/steps.hpp"

namespace podsim {

class ByteReader;
class ByteWriter;

class CollectiveRun {
 public:
  // workload.collective.
  explicit CollectiveRun(const PodConfig& cfg);
  // A model trace's group `name` over `gpus`: its calls' shapes in order (a send: a broadcast
  // from participant 0 over 2, run as coll::build_send).
  CollectiveRun(const PodConfig& cfg, std::string name, std::vector<std::uint32_t> gpus,
                const std::vector<coll::Shape>& calls, bool send);

  // The setup and the collective, as scenario steps: every participant allocates its window,
  // maps it, exports it and sends the handle to the participants that reach into it, imports
  // and maps theirs, meets the others at a barrier, then runs the collective step.
  std::vector<Step> steps() const;
  // The setup alone (a model trace's groups), appended to `steps`.
  void setup_steps(std::vector<Step>& steps) const;
  // Where participant `rank` has each participant's window mapped ("": not mapped).
  std::vector<std::string> windows(std::uint32_t rank) const;
  // The participant GPU `gpu` is (it must be one).
  std::uint32_t rank_of(std::uint32_t gpu) const;
  // A model trace group's k-th call: its shape's index (into shapes() and body()).
  std::size_t call_shape(std::size_t k) const { return call_shape_[k]; }
  std::size_t calls() const { return call_shape_.size(); }

  std::uint32_t participants() const { return static_cast<std::uint32_t>(gpus_.size()); }
  std::uint32_t gpu(std::uint32_t rank) const { return gpus_[rank]; }
  const std::vector<coll::Shape>& shapes() const { return shapes_; }
  const coll::Program& body(std::size_t size, std::uint32_t rank) const {
    return bodies_[size][rank];
  }
  const coll::Program& barrier(std::uint32_t rank) const { return barriers_[rank]; }
  const coll::Layout& layout() const { return layout_; }
  std::uint32_t calls_per_size() const { return warmup_ + iterations_; }

  // Participant `rank`'s call `call` of size `size` ran from start to end (its barrier passed to
  // its program done).
  void note_call(std::uint32_t rank, std::size_t size, std::uint32_t call, Time start, Time end);
  // Every participant's calls, as they ended (for the timeline).
  struct CallRecord {
    std::uint32_t gpu = 0, call = 0;
    std::size_t size = 0;
    Time start, end;
  };
  const std::vector<CallRecord>& call_records() const { return records_; }
  // A participant checked its output at size `size`: elements compared, elements wrong.
  void note_check(std::size_t size, std::uint64_t checked, std::uint64_t wrong);
  // A split run: what this rank's participants noted (pack), added to rank 0's (merge), so
  // that rank 0's results are those of one rank.
  void pack(ByteWriter& out) const;
  void merge(ByteReader& in);

  struct Row {
    std::uint64_t bytes = 0;
    std::uint32_t calls = 0;                     // timed calls every participant finished
    double time_us = 0, min_us = 0, max_us = 0;  // a call: first start to last end
    double algbw_gbps = 0, busbw_gbps = 0;
    bool checked = false;
    std::uint64_t elements_checked = 0, wrong = 0;
  };
  std::vector<Row> rows() const;
  // collectives.csv and collectives.json (rows() with the op, algorithm and participants); a
  // failed run's JSON says so first ("run_failed").
  std::string csv() const;
  std::string json(const std::string& failed_text = {}) const;
  std::string op_name() const;
  // Whether the op sums (all_reduce, reduce_scatter) or only moves data.
  bool reduces() const {
    return !shapes_.empty() &&
           (shapes_[0].op == coll::Op::AllReduce || shapes_[0].op == coll::Op::ReduceScatter);
  }
  // Per size, pod.summary.collective.size_BYTES.{time, algbw, busbw}: what sweeps read.
  const StatGroup& stats() const { return stats_; }
  std::string algorithm_name() const;

 private:
  // Programs, layout and peers from gpus_ and shapes_.
  void prepare(bool send);
  std::string name(const char* what, std::int64_t gpu = -1) const;

  const PodConfig& cfg_;
  std::string name_;  // "" for workload.collective
  std::vector<std::size_t> call_shape_;
  std::vector<std::uint32_t> gpus_;
  std::vector<coll::Shape> shapes_;
  std::vector<std::vector<coll::Program>> bodies_;  // by size, by rank
  std::vector<coll::Program> barriers_;             // by rank
  coll::Layout layout_;
  std::vector<std::vector<std::uint32_t>> peers_;  // by rank: the ranks it maps (not itself)
  std::uint32_t warmup_ = 0, iterations_ = 0;
  struct Call {
    Time start = Time::max(), end;
    std::uint32_t ended = 0;  // participants
  };
  std::vector<std::vector<Call>> calls_;  // by size, by call
  std::vector<std::uint64_t> checked_, wrong_;
  std::vector<std::uint32_t> checks_;  // participants that checked, by size
  std::vector<CallRecord> records_;
  StatGroup stats_{"collective"};
  std::vector<std::unique_ptr<Formula>> formulas_;
};

}  // namespace podsim
