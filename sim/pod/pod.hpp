// Pod: N GpuNodes on a fabric, the workload that drives them (a ScenarioRunner), the
// invariant checks, and the pod-wide summary stats (merged from every GPU when the run ends).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "fabric/topology.hpp"
#include "sim/core/invariants.hpp"
#include "sim/core/time_series.hpp"
#include "sim/kernel/stats_collector.hpp"
#include "sim/node/gpu_node.hpp"
#include "sim/pod/host_net.hpp"
#include "sim/pod/host_phases.hpp"
#include "sim/pod/partition.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/pod_summary.hpp"
#include "sim/pod/scenario.hpp"
#include "sim/pod/stats_json.hpp"

namespace podsim {

class Pod final : public sc_core::sc_module, public HasStats {
 public:
  // `tap`, when given, sits on every TLM binding of every GPU (tests: protocol checkers).
  // `ranks`, when given with more than one rank, splits the pod across them
  // (sim/pod/partition.hpp): this process simulates its part, and once the run is over rank 0
  // holds the whole pod's results (stats, summary, failures, violations, faults, steps).
  Pod(sc_core::sc_module_name name, const PodConfig& cfg, SocketTap* tap = nullptr,
      RankComm* ranks = nullptr);
  ~Pod() override;

  // Access phases replay this trace (each GPU its own lines) instead of generating accesses.
  void replay(const std::vector<TraceEntry>& trace);
  // Keeps every access issued, for access_log().
  void record_accesses();
  // Control events and sampled accesses go to `t` (which must outlive the run).
  void set_timeline(Timeline* t);
  // Every access issued, by GPU, then time.
  std::vector<TraceEntry> access_log() const;

  // Runs the workload to its end (or to sim.max_time), then the teardown and the checks.
  // `between` (optional) is called every `slice` of simulated time: the simulation runs in
  // slices, which changes nothing in it (each slice ends after all work due at its end).
  // A pod runs once: a second call throws std::logic_error.
  void run(const std::function<void()>& between = {}, Time slice = Time::us(20));
  // Accesses completed so far, all GPUs (for progress reports).
  std::uint64_t accesses_completed() const;

  // True when the workload finished, no step failed and no invariant was violated.
  bool ok() const { return finished_ && failures().empty() && invariants_.ok(); }
  bool finished() const { return finished_; }
  // The watchdog stopped the run: something held packets and sent none for sim.stall_limit.
  bool stuck() const { return stuck_; }
  std::vector<std::string> failures() const;
  const InvariantLog& invariants() const { return invariants_; }
  // An import still held at teardown whose exporter no longer grants it: the exporter forgot
  // it (a reset, or its side of the connection reset) without telling the importer, which in
  // the driver finds out only when their connection is set up again. Not a violation: the
  // driver's lazy cleanup, reported beside the results.
  struct StaleImport {
    AccelId importer;
    AccelId exporter;
    std::uint64_t handle_lo;
  };
  const std::vector<StaleImport>& stale_imports() const { return stale_imports_; }
  const ScenarioRunner& scenario() const { return *scenario_; }
  // Every step run, in step order (a partitioned run: every rank's, on rank 0).
  std::vector<StepRecord> step_records() const;
  // GPU `g`'s first faults (a partitioned run: from the rank that simulated it, on rank 0).
  const std::vector<FaultRecord>& fault_log(std::size_t g) const;
  // The split across ranks, if any.
  const Partition* partition() const { return partition_.get(); }
  // Host seconds this rank spent gathering the ranks' results at the end (part of teardown).
  double gather_seconds() const { return gather_seconds_; }
  // How rank 0 of a split run writes stats.json (write_stats): each GPU's and switch's stats
  // as the text the rank that simulated it wrote. Empty for a pod not split.
  StatSplice stat_splice() const;
  const PodConfig& config() const { return cfg_; }
  // GPU `i`. A split run's rank builds only the GPUs it simulates (every GPU with a direct
  // setup): asking for one it did not build throws std::logic_error.
  GpuNode& gpu(std::size_t i);
  std::size_t gpu_count() const { return gpus_.size(); }
  // The GPUs built in this process: all but on a split run's rank, which builds those it
  // simulates (all with a direct setup, which writes both ends of every import at once).
  std::size_t gpus_built() const { return gpus_.size() - elsewhere_.size(); }
  const StatGroup& stat_group() const override { return summary_.group(); }

  // Digests of every GPU's state ("gpu3.driver", "gpu3.gpuvm", "gpu3.npa_mmu", "gpu3.vram",
  // "gpu3.mailbox"): equal digests, equal state (see each component's digest()); and of its
  // MMUs' caches ("gpu3.gpuvm.caches", "gpu3.npa_mmu.caches").
  std::map<std::string, std::uint64_t> state_digests() const;
  std::map<std::string, std::uint64_t> cache_digests() const;
  struct SetupDigests {
    Time caches_at, state_at;
    std::map<std::string, std::uint64_t> caches, state;
  };
  // What the setup left: the caches' digests as the first access phase starts (before any
  // access), the state's once every driver has also finished what the setup started (an
  // exporter may still be answering the last import when its importer starts loading).
  // `done` hears of them then; call before the run. If the teardown begins before the drivers
  // have settled (a short access phase), or the run ends first, no digest is taken and `done`
  // is never called: the state then would not be the setup's.
  void record_setup_digests(std::function<void(const SetupDigests&)> done);

  // Where the host time went (setup, access phases, teardown), and the kernel's work.
  const HostPhases& host() const { return host_; }
  const PacketPool& pool() const { return pool_; }
  // The pod's event queue ("pod.events"): every module's timed work.
  Dispatcher& events() { return events_; }
  const Dispatcher& events() const { return events_; }

  // Headline results (the summary, gathered when the run ends): latency, breakdown, paths,
  // bandwidth, counts, driver times, plane balance, payload efficiency.
  const PodSummary& summary() const { return summary_; }

 private:
  void control();  // the pod's own thread: waits for the workload, tears down, checks
  // The teardown's rounds: every `interval`, each rank says whether its drivers are idle;
  // the pod hears all answers the host latency later.
  void note_idle(const HostNote& n);
  // The drivers of the GPUs simulated here are idle (or their GPUs down).
  bool local_settled() const;
  sc_core::sc_event access_started_;
  struct IdleRound {
    std::uint32_t answers = 0;
    bool idle = true;
  };
  std::map<std::uint32_t, IdleRound> idle_rounds_;
  sc_core::sc_event idle_decided_;
  void finalize();
  void run_windows();
  // A partitioned run's end: every rank's results into rank 0's pod.
  void gather_ranks();
  // What this rank simulated, packed for rank 0 (gather_ranks).
  ByteBuffer pack_results();
  // A split run's walk of its stats: `shared` gets each stat every rank adds to; `mine` the
  // stats.json text of each GPU and switch this rank simulated; the others' are skipped.
  void walk_results(const StatFn& shared,
                    const std::function<void(const sc_core::sc_object&, std::string_view)>& mine);
  // The rank whose copy of the component a stat belongs to counts (a GPU's, a switch's), or -1
  // for stats every rank adds to (links, the summary).
  std::int64_t stat_owner(std::string_view path) const;
  // The teardown's check of what the drivers still hold: collected where each GPU ran,
  // judged where every GPU's are (rank 0), an import against every exporter's grants.
  void collect_holdings();
  // Returns how many violations it reported.
  std::size_t judge_holdings();
  struct Held {
    AccelId gpu;
    driver::Holdings h;
  };
  std::vector<Held> held_;
  Time held_at_;
  std::vector<StaleImport> stale_imports_;

  HostPhases host_;  // first: its clock starts when the pod starts being built
  PodConfig cfg_;
  Dispatcher events_{"events"};  // declared before the modules that queue work: outlives them
  std::vector<bool> owned_;      // by GPU: simulated here
  std::uint32_t ranks_ = 1;
  HostNet net_;
  InvariantLog invariants_;
  PacketPool pool_;
  std::unique_ptr<Fabric> fabric_;
  // The hosts' accelerators (pod.gpus_per_host): before the GPUs, whose drivers wait on them.
  std::vector<std::unique_ptr<driver::Host>> hosts_;
  // By GPU; null: another rank simulates it and it is not built here (elsewhere_ holds its
  // name in the object tree).
  std::vector<std::unique_ptr<GpuNode>> gpus_;
  struct ElsewhereGpu;
  std::vector<std::unique_ptr<ElsewhereGpu>> elsewhere_;
  std::unique_ptr<ScenarioRunner> scenario_;
  std::vector<std::vector<TraceEntry>> replay_;      // by GPU
  std::vector<std::vector<TraceEntry>> access_log_;  // by GPU
  bool finished_ = false;
  bool ran_ = false;
  bool teardown_begun_ = false;  // processes told to exit (state digests are taken before)
  std::vector<std::string> own_failures_;
  // The watchdog (sim.stall_limit): this rank's queues that have held packets and sent none
  // for `limit`, described; empty when none.
  std::vector<std::string> stuck_queues(Time limit) const;
  // Stops the run as stuck (own_failures_ on rank 0 says what, from every rank) if any rank's
  // queues are; true then. Every rank calls it at the same simulated times.
  bool check_stuck();
  Time next_stall_check_;
  bool stuck_ = false;
  RankComm* comm_ = nullptr;
  PartitionPlan plan_;  // before partition_, which refers to it
  std::unique_ptr<Partition> partition_;
  double gather_seconds_ = 0;
  struct RankFailure {
    Time at;
    std::size_t step;
    std::string what;
  };
  std::vector<RankFailure> rank_failures_;  // other ranks' failed steps (rank 0)
  std::vector<StepRecord> rank_records_;    // other ranks' (rank 0)
  std::map<std::size_t, std::vector<FaultRecord>> rank_faults_;  // by GPU (rank 0)
  // Rank 0 of a split run: every rank's results as received, and the stats.json text of each
  // GPU and switch by object name (rank 0's own in own_blocks_, the others' in rank_results_).
  std::vector<ByteBuffer> rank_results_;
  std::deque<std::string> own_blocks_;  // each GPU's and switch's: stays where it was put
  std::unordered_map<std::string_view, std::string_view> blocks_;
  PodSummary summary_;
};

}  // namespace podsim
