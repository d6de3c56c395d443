// Pod: N GpuNodes on a fabric, the workload that drives them (a ScenarioRunner), the
// invariant checks, and the pod-wide summary stats (merged from every GPU when the run ends).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fabric/topology.hpp"
#include "sim/core/invariants.hpp"
#include "sim/core/time_series.hpp"
#include "sim/node/gpu_node.hpp"
#include "sim/pod/host_phases.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/scenario.hpp"

namespace podsim {

class Pod final : public sc_core::sc_module, public HasStats {
 public:
  Pod(sc_core::sc_module_name name, const PodConfig& cfg);
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
  std::vector<std::string> failures() const;
  const InvariantLog& invariants() const { return invariants_; }
  const ScenarioRunner& scenario() const { return *scenario_; }
  const PodConfig& config() const { return cfg_; }
  GpuNode& gpu(std::size_t i) { return *gpus_[i]; }
  std::size_t gpu_count() const { return gpus_.size(); }
  const StatGroup& stat_group() const override { return stats_; }

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
  // `done` hears of them then; call before the run.
  void record_setup_digests(std::function<void(const SetupDigests&)> done);

  // Where the host time went (setup, access phases, teardown), and the kernel's work.
  const HostPhases& host() const { return host_; }
  // The pod's event queue ("pod.events"): every module's timed work.
  Dispatcher& events() { return events_; }
  const Dispatcher& events() const { return events_; }

  // Headline results.
  const Distribution& remote_latency() const { return latency_; }
  const Breakdown& remote_breakdown() const { return breakdown_; }
  // Latency by path, all GPUs: "local", "remote", then "remote_via_N_switch(es)" for each
  // number of switches a request crossed.
  std::vector<std::pair<std::string, const Distribution*>> latency_paths() const;
  // Payload bytes completed over time, all GPUs: channel "remote" and "local".
  const TimeSeries& bandwidth_series() const { return series_; }
  std::uint64_t remote_accesses() const { return accesses_.value(); }
  std::uint64_t remote_reads() const { return reads_.value(); }
  std::uint64_t remote_writes() const { return writes_.value(); }
  std::uint64_t faults() const { return faults_.value(); }
  std::uint64_t retries() const { return retries_.value(); }
  double achieved_bandwidth() const;  // bytes/s of remote payload in the access phases
  Time access_phase() const { return phase_end_ - phase_start_; }
  const Distribution& import_time() const { return import_time_; }
  const Distribution& import_repeat_time() const { return import_repeat_time_; }
  const Distribution& export_time() const { return export_time_; }
  const Distribution& revoke_time() const { return revoke_time_; }
  const Distribution& send_time() const { return send_time_; }
  std::uint64_t messages(driver::MsgType t) const;
  // Least over most bytes the GPUs sent on any plane (1: perfectly even).
  double plane_balance() const;
  // Data bytes per wire byte, over every GPU port.
  double payload_efficiency() const;

 private:
  void control();  // the pod's own thread: waits for the workload, tears down, checks
  sc_core::sc_event access_started_;
  void finalize();
  bool settled() const;
  void check_holdings();

  HostPhases host_;  // first: its clock starts when the pod starts being built
  PodConfig cfg_;
  Dispatcher events_{"events"};  // declared before the modules that queue work: outlives them
  InvariantLog invariants_;
  PacketPool pool_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<GpuNode>> gpus_;
  std::unique_ptr<ScenarioRunner> scenario_;
  std::vector<std::vector<TraceEntry>> replay_;      // by GPU
  std::vector<std::vector<TraceEntry>> access_log_;  // by GPU
  bool finished_ = false;
  bool ran_ = false;
  std::vector<std::string> own_failures_;
  Time phase_start_, phase_end_;

  StatGroup stats_{"summary"};
  Counter accesses_{stats_, "remote_accesses", "count", "remote loads and stores completed"};
  Counter reads_{stats_, "remote_reads", "count", "remote loads completed"};
  Counter writes_{stats_, "remote_writes", "count", "remote stores completed"};
  Counter faults_{stats_, "faults", "count",
                  "accesses completed without being served (faults, remote faults, unreachable)"};
  Counter retries_{stats_, "retries", "count", "accesses re-issued after a retry answer"};
  Counter bytes_{stats_, "remote_bytes", "bytes", "payload bytes of remote accesses"};
  Distribution latency_{stats_, "remote_latency", "ns", "latency of remote accesses, all GPUs",
                        kPsPerNs};
  Breakdown breakdown_;
  Formula bandwidth_;
  Formula phase_time_;
  Distribution export_time_{stats_, "export_time", "ns", "export calls, all GPUs", kPsPerNs};
  Distribution import_time_{stats_, "import_time", "ns",
                            "first imports, all GPUs: from the ioctl to the dma-buf fd", kPsPerNs};
  Distribution import_repeat_time_{stats_, "import_repeat_time", "ns", "repeated imports, all GPUs",
                                   kPsPerNs};
  Distribution revoke_time_{stats_, "revoke_time", "ns",
                            "revokes, all GPUs: from the last handle's close to the last release",
                            kPsPerNs};
  Distribution send_time_{stats_, "send_time", "ns",
                          "control messages, all GPUs: the sender's cost (write to consumed)",
                          kPsPerNs};
  std::vector<std::unique_ptr<Counter>> messages_;
  std::vector<std::unique_ptr<Counter>> plane_bytes_;
  Formula plane_balance_;
  Formula efficiency_;
  Counter violations_{stats_, "invariant_violations", "count", "broken protocol promises"};
  StatGroup paths_{"latency"};
  Distribution path_local_{paths_, "local", "ns", "latency of local VRAM accesses, all GPUs",
                           kPsPerNs};
  Distribution path_remote_{paths_, "remote", "ns", "latency of remote accesses, all GPUs",
                            kPsPerNs};
  std::vector<std::unique_ptr<Distribution>> path_switches_;  // by switches crossed
  TimeSeries series_;
};

}  // namespace podsim
