// Runs a workload's steps: one SystemC thread per GPU process, each doing its steps in order
// (at their times), through the driver's user API; plus pod-level steps (node resets). The
// all_to_all workload is turned into steps too, so there is one engine.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "driver_model/messages.hpp"
#include "sim/node/gpu_node.hpp"
#include "sim/pod/host_net.hpp"
#include "sim/pod/host_phases.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/steps.hpp"

namespace podsim {

class CollectiveRun;
class Fabric;
class ModelRun;

// What happened to one step.
struct StepRecord {
  std::size_t index = 0;
  std::uint32_t gpu = 0, process = 0;
  std::string op;
  Time started, ended;
  std::string result;  // errno name
  std::uint32_t retries = 0;
  // The run ended with it under way, or before it began (record_unfinished).
  bool unfinished() const { return result == "UNFINISHED" || result == "NOT_STARTED"; }
};

class ScenarioRunner {
 public:
  // Spawns the threads; call during elaboration (the Pod's constructor). Barriers, handles
  // passed between GPUs, the end of each process's steps and failures travel as notes on
  // `net` (sim/pod/host_net.hpp). `owned[g]`: GPU g's processes run here (a partitioned run
  // runs each GPU's on one rank; empty: every GPU's). `replay`, when not null, holds each
  // GPU's trace: its access phases replay it. `host`, when not null, hears when access phases
  // begin and end. A GPU of `gpus` may be null where it is another rank's (a split run's rank
  // builds only the GPUs it simulates); `fabric` holds every GPU's links (a link stall acts on
  // every rank, either end of a link may be here).
  ScenarioRunner(const PodConfig& cfg, std::vector<GpuNode*> gpus, Fabric& fabric, HostNet& net,
                 std::vector<bool> owned = {},
                 const std::vector<std::vector<TraceEntry>>* replay = nullptr,
                 HostPhases* host = nullptr);
  ~ScenarioRunner();
  // A note on the host network takes effect (HostNet's `apply`, for every kind but Idle).
  void apply(const HostNote& n);

  // The steps of an all_to_all workload, in scenario form.
  static std::vector<Step> all_to_all_steps(const PodConfig& cfg);
  // workload.kind = collective: its participants, programs and results (else null).
  const CollectiveRun* collective() const { return collective_.get(); }
  CollectiveRun* collective() { return collective_.get(); }
  // workload.kind = model: its trace, groups and what each node did (else null).
  const ModelRun* model() const { return model_.get(); }
  ModelRun* model() { return model_.get(); }

  // Every process's steps (on every rank) are done, and the pod has heard so.
  bool finished() const { return finished_groups_ == groups_.size(); }
  const sc_core::sc_event& finished_event() const { return finished_ev_; }
  // Failures of a direct setup (on every rank alike), then of the steps run here, as they
  // happened (Pod::failures lists every rank's in time order, then by step).
  const std::vector<std::string>& failures() const { return failures_; }
  std::size_t setup_failures() const { return setup_failures_; }
  // When each failure of a step happened and the step, in failures()'s order (after the
  // setup's).
  const std::vector<std::pair<Time, std::size_t>>& failed_at() const { return failed_at_; }
  // When the workload started: the pod's bring-up done (0 with direct setup). Steps' `at`
  // count from it.
  Time workload_start() const { return start_; }
  bool workload_started() const { return started_; }
  // A split run: the start as another rank saw it (every rank that runs a process sees the
  // same; a rank that runs none, none), for rank 0's results.
  void merge_start(bool started, Time at) {
    if (started && !started_) {
      started_ = true;
      start_ = at;
    }
  }
  // The steps run here, in the order they ended.
  const std::vector<StepRecord>& records() const { return records_; }
  // The run ended (sim.max_time, the watchdog) with steps under way: each is recorded as it
  // stands, result "UNFINISHED" (or "NOT_STARTED": the next step of its process, waiting for
  // its `at`), ended now. Once, at the end.
  void record_unfinished();
  // The (gpu, process) pairs that ran steps (on every rank).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> processes() const;
  // Called once, when the first access phase is about to start (before any access).
  void on_first_access(std::function<void()> fn) { on_first_access_ = std::move(fn); }

 private:
  struct Mapping {
    std::uint64_t va = 0, bytes = 0;
    driver::GemHandle gem = 0;
    bool local = false;
  };
  struct ProcessState {
    std::map<std::string, driver::GemHandle> buffers;
    std::map<std::string, driver::Fd> fds;
    std::map<std::string, Mapping> mappings;
    std::uint64_t next_va = 0x0000'1000'0000'0000ull;
  };
  struct Barrier {
    std::uint32_t index = 0;  // in name order
    std::size_t expected = 0, arrived = 0;
    sc_core::sc_event ev;
  };
  using Key = std::pair<std::uint32_t, std::uint32_t>;  // gpu, process (process 0: the pod)

  void run_group(Key key, std::vector<std::size_t> steps);
  // The pod's bring-up of GPU `g` (protocol setup); every group waits for all of them.
  void run_bring_up(std::uint32_t g);
  void wait_for_start();
  void arrive(const Barrier& bar, std::uint32_t gpu);      // GPU `gpu` reached `bar`
  static constexpr const char* kBringUp = "\x01bring-up";  // no config name starts so
  // workload.setup = direct: carries out `steps`' setup (alloc, map, export, send_handle,
  // import, close_fd) on the drivers without simulating it; returns the steps left to run.
  std::vector<Step> direct_setup(const std::vector<Step>& steps);
  driver::Errno run_step(const Step& s, ProcessState& ps, std::string& detail);
  // GPU `gpu`'s links (every plane's) carry nothing for `for_` from now.
  void stall_links(std::uint32_t gpu, Time for_);
  struct StepRun;      // run_step's visitor: one call operator per op (scenario.cpp)
  struct DirectSetup;  // direct_setup's: one per setup op
  void fail(std::size_t step, const std::string& what);

  const PodConfig& cfg_;
  std::vector<GpuNode*> gpus_;
  Fabric& fabric_;
  HostNet& net_;
  std::vector<bool> owned_;
  const std::vector<std::vector<TraceEntry>>* replay_;
  HostPhases* host_;
  std::vector<Step> steps_;
  std::map<Key, std::vector<std::size_t>> groups_;
  std::map<Key, ProcessState> states_;
  std::vector<std::map<std::string, driver::UalinkHandle>> handles_;  // per GPU
  std::vector<std::set<std::string>> lost_handles_;  // per GPU: will not come (on_failure)
  sc_core::sc_event handle_ev_;
  // fds other processes of the same GPU send each process (send_fd), by name: a step that
  // uses one waits for it; fd_ev_ fires when one arrives.
  std::map<Key, std::set<std::string>> fds_sent_, fds_arrived_;
  sc_core::sc_event fd_ev_;
  std::map<std::string, Barrier> barriers_;
  std::vector<Barrier*> barrier_by_index_;
  bool started_ = false;  // the bring-up done (or none): steps' `at` count from start_
  Time start_;
  std::size_t finished_groups_ = 0;
  sc_core::sc_event finished_ev_;
  sc_core::sc_event failed_ev_;  // a failure has reached the pod: it stops
  std::vector<std::string> failures_;
  // When each failure of a step happened, and the step.
  std::vector<std::pair<Time, std::size_t>> failed_at_;
  std::size_t setup_failures_ = 0;  // a direct setup's, listed first
  std::vector<StepRecord> records_;
  std::map<std::size_t, StepRecord> running_;  // steps under way here, by index
  std::function<void()> on_first_access_;
  std::unique_ptr<CollectiveRun> collective_;
  std::unique_ptr<ModelRun> model_;
  // Programs a model step left running on a compute agent when it stopped at a failure: kept
  // for as long as the agent may still drive them.
  std::vector<std::unique_ptr<coll::Runner>> parked_;
};

}  // namespace podsim
