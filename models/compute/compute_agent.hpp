// ComputeAgent: the wavefronts of one GPU, reduced to what loads and stores do to memory. In
// an access phase it keeps `outstanding` accesses in flight over the regions it was given
// (uniform random, aligned to the access size), for a count or a duration, re-issues those
// answered with a retry, and records for every completed access its latency and where that
// latency went hop by hop.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/compute/compute_config.hpp"
#include "models/compute/trace_entry.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class Timeline;
class TimeSeries;
namespace coll {
class Runner;
}

// A range of a process's GPU virtual address space to access.
struct AccessRegion {
  std::uint64_t va = 0;
  std::uint64_t bytes = 0;
  bool local = false;  // the GPU's own VRAM (else an imported buffer)
};

class ComputeAgent final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_initiator_socket<ComputeAgent> to_gpuvm{"to_gpuvm"};

  ComputeAgent(sc_core::sc_module_name name, const ComputeConfig& cfg, AccelId self,
               PacketPool& pool, Dispatcher& events, Rng rng);

  // Starts an access phase now in address space `vmid`. `done()` fires when it has ended and
  // every access it issued has completed. Poisson injection issues one access every
  // `mean_interarrival` on average. With `replay` (a trace's accesses of this GPU, possibly
  // none) it issues exactly those, each at its time, instead of generating any.
  void start(const TrafficConfig& traffic, std::vector<AccessRegion> regions, std::uint16_t vmid,
             Time mean_interarrival = Time{},
             std::optional<std::vector<TraceEntry>> replay = std::nullopt);
  // Runs a collective's program (models/compute/collective) now in address space `vmid`:
  // `runner` (started already, and outliving the run) says which loads and stores to issue
  // and takes their completions. Programs run side by side, each with its own outstanding
  // accesses; `done()` fires as each ends (running() says which still run) and `finished()`
  // once none does.
  void run_program(coll::Runner& runner, std::uint16_t vmid);
  bool running(const coll::Runner& runner) const;
  // Sampled accesses, with their hops, go to this timeline (null: nowhere).
  void set_timeline(Timeline* t) { timeline_ = t; }
  // Completed payload bytes go into this series: channel 0 remote, 1 local (null: nowhere).
  void set_series(TimeSeries* s) { series_ = s; }
  // Stores carry a recognisable pattern (their access ID) for functional VRAM data; without
  // it (speed studies) they carry nothing in particular.
  void set_fill_data(bool on) { fill_data_ = on; }
  // Records every access issued (for an access log that can be replayed).
  void record_to(std::vector<TraceEntry>* log) { record_ = log; }
  // Device reset: the phase ends at once; what is in flight is forgotten.
  void abort();
  const sc_core::sc_event& done() const { return done_ev_; }
  bool finished() const { return !active_; }
  std::uint64_t issued() const { return issued_; }
  std::uint64_t completed() const { return completed_; }

  const StatGroup& stat_group() const override { return stats_; }
  // Stats a pod-level summary merges across GPUs.
  const Distribution& remote_latency() const { return latency_; }
  const Distribution& local_latency() const { return local_latency_; }
  // Remote latency by the switches the request crossed (index n: n switches; null: none seen).
  const std::vector<std::unique_ptr<Distribution>>& remote_latency_by_switches() const {
    return by_switches_;
  }
  static std::string switches_name(std::size_t n) {
    return "via_" + std::to_string(n) + (n == 1 ? "_switch" : "_switches");
  }
  const Breakdown& remote_breakdown() const { return breakdown_; }
  // The same over the measured window only: remote accesses issued after the warm-up
  // (workload.traffic.warmup, warmup_accesses); without a warm-up, every access.
  bool windowed() const { return windowed_; }
  const Distribution& measured_latency() const { return windowed_ ? m_latency_ : latency_; }
  const Breakdown& measured_breakdown() const { return windowed_ ? m_breakdown_ : breakdown_; }
  std::uint64_t measured_bytes() const { return m_bytes_; }
  // Accesses issued in a warm-up (never measured).
  std::uint64_t warmup_issued() const { return warmup_issued_; }
  // The measured remote accesses issued in the first and in the second half of this GPU's
  // span of measured issues (by issue time): how many, their latencies' sum.
  struct Half {
    std::uint64_t count = 0, latency_ps = 0;
  };
  std::array<Half, 2> halves() const { return trend_.halves(); }
  // The measured window of this GPU: its first measured access issued, its last completed
  // (none: Time::max(), 0); and the measured remote accesses completed (posted stores too).
  Time measured_first_issue() const { return m_first_issue_; }
  Time measured_last_complete() const { return m_last_complete_; }
  std::uint64_t measured_completed() const { return m_completed_; }
  // Access phases started (a scenario may run several on one GPU).
  std::uint32_t phases() const { return phases_; }
  Time first_issue() const { return first_issue_; }
  Time last_complete() const { return last_complete_; }
  std::uint64_t remote_bytes() const { return remote_bytes_.value(); }
  std::uint64_t remote_reads() const { return remote_reads_.value(); }
  std::uint64_t remote_writes() const { return remote_writes_.value(); }
  std::uint64_t local_bytes() const { return local_bytes_.value(); }
  std::uint64_t faults() const {
    return faults_.value() + remote_faults_.value() + unreachable_.value();
  }
  // The three ways an access goes unserved: no mapping in its own GPUVM (never sent), refused
  // by the exporter (no valid NPA mapping), or sent to a GPU that was down.
  std::uint64_t gpuvm_faults() const { return faults_.value(); }
  std::uint64_t remote_faults() const { return remote_faults_.value(); }
  std::uint64_t unreachable() const { return unreachable_.value(); }
  std::uint64_t retries() const { return retries_.value(); }

  static std::vector<std::string> breakdown_parts();
  static constexpr std::size_t breakdown_slot(HopKind k, bool response) {
    return (response ? static_cast<std::size_t>(HopKind::Count) : 0) + static_cast<std::size_t>(k);
  }

 private:
  // The latency of remote accesses whose request crossed `switches` switches (made the first
  // time one does).
  Distribution& latency_via(std::size_t switches);
  void issue_more();
  void issue_one();
  // Returns the access's ID.
  std::uint64_t issue(AccessOp op, std::uint64_t va, std::uint32_t size,
                      const unsigned char* data = nullptr, bool sync = false);
  // A program's accesses: what its runner asks for, and its tokens by access ID.
  void drive_program();
  struct TokenSlot {
    std::uint64_t id = 0;
    std::uint32_t token = 0;
    coll::Runner* runner = nullptr;
  };
  std::vector<TokenSlot> tokens_;  // by access ID modulo its size (a power of two)
  void put_token(std::uint64_t id, std::uint32_t token, coll::Runner* runner);
  TokenSlot take_token(std::uint64_t id);
  std::vector<coll::Runner*> runners_;  // the programs running, in the order they started
  // The next access's address, by pattern.
  std::uint64_t pick_address();
  void send(tlm::tlm_generic_payload& gp, Time delay);
  bool may_issue() const;
  void check_done();
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  void complete(tlm::tlm_generic_payload* gp);

  // What every access touches, first and together: the agent's own state, then its stats (in
  // the order they are registered, which is the order stats.json lists them).
  StatGroup stats_;
  AccelId self_;
  std::uint16_t vmid_ = 0;
  std::uint32_t epoch_ = 0;  // accesses of an aborted phase are dropped when they return
  bool active_ = false;
  bool fill_data_ = true;
  std::uint64_t issued_ = 0, completed_ = 0, in_flight_ = 0, phase_issued_ = 0;
  Time first_issue_ = Time::max(), last_complete_;
  Time issue_latency_;
  PacketPool& pool_;
  TimeSeries* series_ = nullptr;
  Timeline* timeline_ = nullptr;
  std::vector<TraceEntry>* record_ = nullptr;
  Rng rng_;
  // A region as picking an address reads it: one place per pick (in a GPU importing from 71
  // peers, three arrays indexed by the region chosen were three cache misses an access).
  struct Pick {
    std::uint64_t va;
    std::uint64_t slots;  // places for an access of access_size, access_stride() apart
    std::uint64_t bytes;
  };
  std::vector<Pick> local_, remote_;  // regions_ by kind, in order
  std::vector<AccessRegion> regions_;
  TrafficConfig traffic_;
  Counter remote_reads_{stats_, "remote_reads", "count", "completed remote loads"};
  Counter remote_writes_{stats_, "remote_writes", "count", "completed remote stores"};
  Counter local_accesses_{stats_, "local_accesses", "count", "completed local VRAM accesses"};
  Counter local_bytes_{stats_, "local_bytes", "bytes", "payload bytes of local accesses"};
  Counter atomics_{stats_, "remote_atomics", "count", "completed remote atomics"};
  Distribution local_latency_{stats_, "local_latency", "ns",
                              "issue-to-completion latency of local VRAM accesses", kPsPerNs};
  Counter faults_{
      stats_, "faults", "count",
      "accesses to unmapped or invalidated pages (GPUVM fault, never sent; posted stores "
      "count in gpuvm.faults only)"};
  Counter remote_faults_{stats_, "remote_faults", "count",
                         "accesses the exporter refused (no valid NPA mapping), not served"};
  Counter unreachable_{stats_, "unreachable", "count",
                       "accesses to a GPU that was down, not served"};
  Counter retries_{stats_, "retries", "count",
                   "accesses re-issued after a retry answer (revoke or page move in progress)"};
  Counter remote_bytes_{stats_, "remote_bytes", "bytes", "payload bytes moved by remote accesses"};
  Counter posted_{stats_, "posted_writes", "count", "stores issued without a response"};
  std::vector<std::unique_ptr<Distribution>> by_switches_;
  Distribution latency_{stats_, "remote_latency", "ns",
                        "issue-to-completion latency of remote accesses (retries included)",
                        kPsPerNs};
  Distribution read_latency_{stats_, "remote_read_latency", "ns",
                             "issue-to-completion latency of remote loads", kPsPerNs};
  Distribution write_latency_{stats_, "remote_write_latency", "ns",
                              "issue-to-completion latency of remote stores", kPsPerNs};
  Breakdown breakdown_;
  // The measured window's own figures (kept out of stats.json: the pod summary reports them).
  bool windowed_ = false;
  Time warm_end_;
  std::uint32_t phases_ = 0;
  std::uint64_t m_completed_ = 0;
  // Latencies by issue time since the first measured issue, in 64 bins that double in width
  // as the span grows: the two halves of the span at the end, whatever its length.
  class Trend {
   public:
    void add(Time since, Time latency) {
      auto bin = static_cast<std::uint64_t>(since.as_ps()) >> shift_;
      while (bin >= kBins) {  // coarsen: pairs merge, bins double
        for (std::size_t i = 0; i < kBins / 2; ++i) {
          bins_[i].count = bins_[2 * i].count + bins_[2 * i + 1].count;
          bins_[i].latency_ps = bins_[2 * i].latency_ps + bins_[2 * i + 1].latency_ps;
        }
        for (std::size_t i = kBins / 2; i < kBins; ++i)
          bins_[i] = Half{};
        ++shift_;
        bin >>= 1;
      }
      ++bins_[bin].count;
      bins_[bin].latency_ps += static_cast<std::uint64_t>(latency.as_ps());
    }
    std::array<Half, 2> halves() const {
      std::size_t used = 0;
      for (std::size_t i = 0; i < kBins; ++i)
        if (bins_[i].count) used = i + 1;
      std::array<Half, 2> h{};
      for (std::size_t i = 0; i < used / 2; ++i) {  // an odd middle bin is in neither
        h[0].count += bins_[i].count;
        h[0].latency_ps += bins_[i].latency_ps;
        h[1].count += bins_[used - 1 - i].count;
        h[1].latency_ps += bins_[used - 1 - i].latency_ps;
      }
      return h;
    }

   private:
    static constexpr std::size_t kBins = 64;
    std::array<Half, kBins> bins_{};
    unsigned shift_ = 10;  // 1 ns bins to begin with
  };
  Trend trend_;
  std::uint64_t warmup_issued_ = 0, m_bytes_ = 0;
  Time m_first_issue_ = Time::max(), m_last_complete_;
  StatGroup measured_stats_{"measured"};
  Distribution m_latency_{measured_stats_, "remote_latency", "ns", "", kPsPerNs};
  Breakdown m_breakdown_{measured_stats_, "remote_breakdown", "ns", "", breakdown_parts(),
                         kPsPerNs};

  ComputeConfig cfg_;
  struct Stream {
    std::size_t region = 0;  // in its pool
    std::uint64_t offset = 0;
  };
  std::array<Stream, 2> stream_{};  // remote, local
  std::vector<TraceEntry> replay_;
  bool replaying_ = false;  // a trace's accesses, not generated ones
  std::size_t replay_next_ = 0;
  Time phase_start_;
  Time mean_interarrival_;
  Time phase_end_;
  sc_core::sc_event done_ev_;
  Timer issue_timer_;
  TimedQueue<tlm::tlm_generic_payload*> completions_;
  RequestLane requests_;  // to_gpuvm's request side
  void note_access(const Access& a, Time now);
  // A measured remote access completed now, with `bytes` of payload.
  void note_window(std::uint64_t bytes, Time now) {
    m_bytes_ += bytes;
    ++m_completed_;
    m_last_complete_ = now;
  }
};

}  // namespace podsim
