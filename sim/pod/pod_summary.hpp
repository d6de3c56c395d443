// The pod's summary: its own stats component ("pod.summary"), gathered from every GPU once a
// run is over: remote accesses and their latency (by path, and broken down by hop), bandwidth,
// the control path's call and message figures, balance over planes and the wire's efficiency.
// During the run only the bandwidth series is fed (by the agents).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/invariants.hpp"
#include "sim/core/stats.hpp"
#include "sim/core/time_series.hpp"
#include "sim/node/gpu_node.hpp"

namespace podsim {

class PodSummary {
 public:
  // A span of simulated time: from the earliest start to the latest end of the spans it
  // covers (each GPU's, then each rank's).
  struct Span {
    Time start, end;
    bool any = false;
    void cover(Time s, Time e) {
      start = any ? std::min(start, s) : s;
      end = any ? std::max(end, e) : e;
      any = true;
    }
    Time length() const { return any && end > start ? end - start : Time{}; }
  };

  PodSummary(std::uint32_t planes, Time sample_interval);

  // Gathers every GPU's figures and the invariant log's count. Once, after the run. The
  // latency by switches crossed is listed for every count in `paths` (bit n: n switches) and
  // every count a GPU saw, in increasing order. A null GPU is one another rank simulated
  // and this one did not build.
  // `owned`, when given, says which GPUs count here (a pod split across ranks: those this rank
  // simulated; the others' figures come from their ranks).
  // The teardown's judgement, made once every rank's results are in (a split run's rank 0,
  // after gather): violations it found beyond those gathered, and the stale imports.
  void add_teardown(std::uint64_t violations, std::uint64_t stale_imports) {
    violations_.inc(violations);
    stale_imports_.inc(stale_imports);
  }
  void gather(const std::vector<std::unique_ptr<GpuNode>>& gpus, const InvariantLog& invariants,
              std::uint64_t paths = 0, const std::vector<bool>* owned = nullptr);
  // Bit n: some GPU's request crossed n switches.
  static std::uint64_t paths_seen(const std::vector<std::unique_ptr<GpuNode>>& gpus);

  const StatGroup& group() const { return stats_; }
  // Another group of pod-wide stats under this one (a collective's: pod.summary.collective).
  void attach(const StatGroup& g) { stats_.add_child(g); }

  // A pod split across ranks: what gather found beyond the stats (the access phases' span,
  // the wire's bytes, the bandwidth series), packed on one rank and merged into another's.
  void pack_extras(std::vector<std::uint64_t>& out) const;
  const std::uint64_t* merge_extras(const std::uint64_t* in, const std::uint64_t* end);
  // The latency of remote accesses that crossed `n` switches (made if it is not there yet).
  Distribution& path_via(std::size_t n);
  // Payload bytes completed over time, all GPUs: channel "remote" and "local" (the agents add
  // to it as they complete accesses).
  TimeSeries& series() { return series_; }
  const TimeSeries& series() const { return series_; }

  const Distribution& remote_latency() const { return latency_; }
  const Breakdown& remote_breakdown() const { return breakdown_; }
  // "local", "remote", then "remote_via_N_switch(es)" for each number of switches crossed.
  std::vector<std::pair<std::string, const Distribution*>> latency_paths() const;
  std::uint64_t remote_accesses() const { return accesses_.value(); }
  std::uint64_t remote_reads() const { return reads_.value(); }
  std::uint64_t remote_writes() const { return writes_.value(); }
  std::uint64_t faults() const { return faults_.value(); }
  std::uint64_t gpuvm_faults() const { return gpuvm_faults_.value(); }
  std::uint64_t remote_faults() const { return remote_faults_.value(); }
  std::uint64_t unreachable() const { return unreachable_.value(); }
  std::uint64_t retries() const { return retries_.value(); }
  std::uint64_t posted_lost() const { return posted_lost_.value(); }
  double achieved_bandwidth() const;  // bytes/s of remote payload in the access phases
  Time access_phase() const { return phase_.length(); }
  // The access phases' span: from the first access issued to the last completed (none: 0, 0).
  Time access_start() const { return phase_.start; }
  Time access_end() const { return phase_.end; }
  // The measured window (after every GPU's warm-up) and what was measured in it.
  const Span& window() const { return window_; }
  const Distribution& measured_latency() const { return m_latency_; }
  const Breakdown& measured_breakdown() const { return m_breakdown_; }
  std::uint64_t measured_accesses() const { return m_completed_.value(); }
  // The most access phases any GPU ran (more than one: the window spans the gaps between).
  std::uint64_t max_phases() const { return max_phases_; }
  std::uint64_t warmup_accesses() const { return m_warmup_.value(); }
  double measured_bandwidth() const;  // bytes/s of measured remote payload over the window
  // A warm-up was asked for (else the window is the access phases and its figures the
  // whole run's).
  bool windowed() const { return windowed_; }
  // The measured remote accesses issued in the first and the second half of their GPUs'
  // windows, all GPUs: how many, and their mean latency.
  std::uint64_t half_count(int h) const { return halves_[h].count; }
  Time half_mean(int h) const {
    return halves_[h].count
               ? Time::ps(static_cast<std::int64_t>(halves_[h].latency_ps / halves_[h].count))
               : Time{};
  }
  const Distribution& import_time() const { return import_time_; }
  const Distribution& import_repeat_time() const { return import_repeat_time_; }
  const Distribution& export_time() const { return export_time_; }
  const Distribution& revoke_time() const { return revoke_time_; }
  const Distribution& send_time() const { return send_time_; }
  std::uint64_t messages(driver::MsgType t) const;
  double plane_balance() const;
  double payload_efficiency() const { return wire_ > 0 ? payload_ / wire_ : 0.0; }

 private:
  Span phase_;  // the access phases: first access issued to last completed
  // The measured window of a run's access phases (workload.traffic.warmup): the measured remote
  // accesses are those issued after their GPU's warm-up (without one, all of them), and the
  // window runs from the first of them issued to the last completed, all GPUs. Everything they
  // moved, and every packet of theirs, falls inside it, so a rate or a utilisation over it is
  // never above the truth; it is below by about one latency over the window's length (the
  // first accesses' flight, with nothing yet delivered), which a run warns about when that is
  // over 5% (window_too_short). (Each port, link and VRAM measures its own utilisation over its
  // own part of it: from the first measured access reaching it to the last leaving.)
  Span window_;
  bool windowed_ = false;
  std::uint64_t m_bytes_ = 0;
  // Payload bytes of posted stores lost at their targets (all, measured): counted as moved by
  // their issuers (remote_bytes), not delivered, so not in the bandwidths.
  LostBytes lost_bytes_;
  std::array<ComputeAgent::Half, 2> halves_{};
  std::uint64_t max_phases_ = 0;
  double payload_ = 0, wire_ = 0;  // bytes over every GPU port

  StatGroup stats_{"summary"};
  Counter accesses_{stats_, "remote_accesses", "count",
                    "remote loads and stores completed with an answer (posted stores have none: "
                    "measured.remote_accesses counts them as issued)"};
  Counter reads_{stats_, "remote_reads", "count", "remote loads completed"};
  Counter writes_{stats_, "remote_writes", "count", "remote stores completed"};
  Counter faults_{stats_, "faults", "count",
                  "accesses completed without being served (faults, remote faults, unreachable)"};
  Counter gpuvm_faults_{stats_, "gpuvm_faults", "count",
                        "of faults: no valid mapping in the initiator's own GPUVM (never sent)"};
  Counter remote_faults_{stats_, "remote_faults", "count",
                         "of faults: refused by the exporter (no valid NPA mapping)"};
  Counter unreachable_{stats_, "unreachable", "count", "of faults: sent to a GPU that was down"};
  Counter retries_{stats_, "retries", "count", "accesses re-issued after a retry answer"};
  Counter posted_lost_{stats_, "posted_lost", "count",
                       "posted stores that faulted in their own GPUVM (never sent), or were "
                       "answered with a retry or a fault at their target (revoked or unmapped "
                       "as they landed): nobody waits for the answer, so they are lost"};
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
  Counter stale_imports_{stats_, "stale_imports", "count",
                         "imports held at teardown whose exporter no longer grants them (never "
                         "told: the driver's lazy cleanup)"};
  StatGroup measured_{"measured"};
  Counter m_completed_{measured_, "remote_accesses", "count",
                       "remote loads and stores issued after their GPU's warm-up and completed "
                       "(posted stores when issued)"};
  Counter m_warmup_{measured_, "warmup_accesses", "count",
                    "accesses issued during a warm-up (workload.traffic.warmup, warmup_accesses): "
                    "run, not measured"};
  Distribution m_latency_{measured_, "remote_latency", "ns",
                          "latency of the measured remote accesses, all GPUs", kPsPerNs};
  Breakdown m_breakdown_;
  Formula m_bandwidth_;
  Formula m_start_;
  Formula m_time_;
  StatGroup paths_{"latency"};
  Distribution path_local_{paths_, "local", "ns", "latency of local VRAM accesses, all GPUs",
                           kPsPerNs};
  Distribution path_remote_{paths_, "remote", "ns", "latency of remote accesses, all GPUs",
                            kPsPerNs};
  std::vector<std::unique_ptr<Distribution>> path_switches_;  // by switches crossed
  TimeSeries series_;
};

}  // namespace podsim
