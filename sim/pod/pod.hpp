// Pod: N GpuNodes on a fabric, plus the workload that drives them and the pod-wide summary
// stats (merged from every GPU when the run ends).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "fabric/topology.hpp"
#include "models/gpu_node.hpp"
#include "sim/pod/pod_config.hpp"

namespace podsim {

class Pod final : public sc_core::sc_module, public HasStats {
 public:
  Pod(sc_core::sc_module_name name, const PodConfig& cfg);
  ~Pod() override;

  // Runs the workload to its end (or to sim.max_time). Call once.
  void run();
  // Merges per-GPU stats into the pod summary; run() calls it.
  void finalize();

  bool finished() const { return finished_gpus_ == initiators_.size() && failures_.empty(); }
  const std::vector<std::string>& failures() const { return failures_; }
  const PodConfig& config() const { return cfg_; }
  GpuNode& gpu(std::size_t i) { return *gpus_[i]; }
  std::size_t gpu_count() const { return gpus_.size(); }
  const StatGroup& stat_group() const override { return stats_; }

  // Headline results.
  const Distribution& remote_latency() const { return latency_; }
  const Breakdown& remote_breakdown() const { return breakdown_; }
  std::uint64_t remote_accesses() const { return accesses_.value(); }
  std::uint64_t remote_reads() const { return reads_.value(); }
  std::uint64_t remote_writes() const { return writes_.value(); }
  std::uint64_t faults() const { return faults_.value(); }
  double achieved_bandwidth() const;  // bytes/s of remote payload in the access phase
  Time access_phase() const { return phase_end_ - phase_start_; }
  const Distribution& import_time() const { return import_time_; }

  // Where GPU `importer` maps GPU `exporter`'s buffer in its address space.
  std::uint64_t import_va(AccelId exporter) const;
  static constexpr std::uint64_t kLocalVa = 0x0000'1000'0000'0000ull;
  static constexpr std::uint64_t kRemoteVa = 0x0000'2000'0000'0000ull;

 private:
  void workload(AccelId self);
  void fail(AccelId gpu, const std::string& what);

  PodConfig cfg_;
  PacketPool pool_;
  std::unique_ptr<Fabric> fabric_;
  std::vector<std::unique_ptr<GpuNode>> gpus_;
  std::vector<AccelId> initiators_;
  std::vector<bool> is_initiator_;
  std::uint64_t va_stride_;

  // the out-of-band handle exchange (what MPI does for real applications)
  std::vector<driver::UalinkHandle> directory_;
  std::uint32_t published_ = 0, mapped_ = 0, finished_gpus_ = 0;
  sc_core::sc_event published_ev_, mapped_ev_;
  std::vector<std::string> failures_;
  bool finalized_ = false;
  Time phase_start_, phase_end_;

  StatGroup stats_{"summary"};
  Counter accesses_{stats_, "remote_accesses", "count", "remote loads and stores completed"};
  Counter reads_{stats_, "remote_reads", "count", "remote loads completed"};
  Counter writes_{stats_, "remote_writes", "count", "remote stores completed"};
  Counter faults_{stats_, "faults", "count", "accesses completed as faults"};
  Counter bytes_{stats_, "remote_bytes", "bytes", "payload bytes of remote accesses"};
  Distribution latency_{stats_, "remote_latency", "ns", "latency of remote accesses, all GPUs",
                        kPsPerNs};
  Breakdown breakdown_;
  Formula bandwidth_;
  Formula phase_time_;
  Distribution import_time_{stats_, "import_time", "ns",
                            "first imports, all GPUs: from the ioctl to the dma-buf fd", kPsPerNs};
  Distribution export_time_{stats_, "export_time", "ns", "export calls, all GPUs", kPsPerNs};
};

}  // namespace podsim
