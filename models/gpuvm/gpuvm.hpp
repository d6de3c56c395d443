// GpuVm: the requester's MMU. Translates a compute agent's GPU virtual address, per process
// address space (VMID), through UTCL1/UTCL2 TLBs, a page-walk cache and page walkers
// (MmuCore) into a local VRAM address or an NPA, then sends the access to VRAM or to the
// UALink port of the plane its address hashes to. An access to an unmapped or invalidated
// page completes as a fault (counted, logged with address and time) and is never sent.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <memory>
#include <span>
#include <vector>

#include "models/gpuvm/gpuvm_config.hpp"
#include "models/mmu/mmu.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

struct FaultRecord {
  Time at;
  std::uint16_t vmid;
  std::uint64_t va;
  bool write;
};

class GpuVm final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_target_socket<GpuVm> from_agent{"from_agent"};
  tlm_utils::simple_initiator_socket<GpuVm> to_vram{"to_vram"};
  // One per switch plane, bound in plane order; remote accesses spread by address hash.
  tlm_utils::multi_passthrough_initiator_socket<GpuVm> to_ports{"to_ports"};

  GpuVm(sc_core::sc_module_name name, const GpuVmConfig& cfg, AccelId self, std::uint32_t planes,
        Bytes plane_interleave, Dispatcher& events, std::uint64_t seed);

  // The plane (port) an access to NPA byte address `npa` takes.
  std::uint32_t plane_of(std::uint64_t npa) const;

  // -- programming interface (the driver's page-table updates)
  void map_page(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte);
  // Pages [va_page, va_page + pages) as `proto` with frames `frames` (or, when empty, counting
  // up from proto.frame) and the largest fragments that hold (best_fragment), replacing what
  // was there: one pass.
  void map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages, const Pte& proto,
           std::span<const std::uint64_t> frames);
  void unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages);
  // Invalidates address space `vmid`'s cached translations of pages [first, first + pages)
  // (all of them when pages is 0); what it costs.
  Time invalidate(std::uint16_t vmid, FlushKind kind, std::uint64_t first = 0,
                  std::uint64_t pages = 0);
  // A remote shootdown (the snapshot always flushes everything): every address space.
  void invalidate_all();
  // Device reset: no page tables, nothing cached.
  void reset();
  const PageTable* page_table(std::uint16_t vmid) const;
  const std::vector<FaultRecord>& fault_log() const { return fault_log_; }
  // Page tables (every address space); what the MMU has cached (TLBs, page-walk cache,
  // walkers).
  void digest(Digest& d) const;
  void digest_caches(Digest& d) const;

  const StatGroup& stat_group() const override { return stats_; }
  // Posted stores that faulted here (never sent; nobody waits for the answer, so they are
  // lost), and their payload bytes.
  std::uint64_t posted_faults() const { return posted_faults_; }
  const LostBytes& posted_fault_bytes() const { return posted_fault_bytes_; }
  const GpuVmConfig& config() const { return cfg_; }

 private:
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw_port(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d);
  void translate(tlm::tlm_generic_payload* gp);
  // An answer from VRAM or a port (or a fault here) goes back to the agent.
  void answer(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d);

  GpuVmConfig cfg_;
  AccelId self_;
  std::uint32_t planes_;
  unsigned interleave_shift_;
  MmuCore mmu_;
  std::vector<std::unique_ptr<PageTable>> tables_;  // by VMID (null: none yet)
  std::vector<FaultRecord> fault_log_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;
  ResponseLane to_agent_;                   // from_agent's response side
  RequestLane to_vram_lane_;                // to_vram's request side
  std::vector<RequestLane> to_port_lanes_;  // to_ports' request sides, by plane

  StatGroup stats_;
  Counter translations_{stats_, "translations", "count", "accesses translated"};
  Counter l1_hits_{stats_, "l1_hits", "count", "translations that hit in the L1 TLB"};
  Counter l2_hits_{stats_, "l2_hits", "count", "translations that missed L1 and hit L2"};
  Counter walks_{stats_, "walks", "count", "translations that missed both TLBs: page walks"};
  Counter levels_read_{stats_, "walk_levels_read", "count",
                       "page-table entries the walks read (fewer with the page-walk cache)"};
  Distribution walker_wait_{stats_, "walker_wait", "ns", "time walks waited for a free walker",
                            kPsPerNs};
  Counter faults_{stats_, "faults", "count",
                  "accesses to unmapped or invalidated pages (completed as faults, not served)"};
  Counter local_{stats_, "local_accesses", "count", "accesses sent to local VRAM"};
  Counter remote_{stats_, "remote_accesses", "count", "accesses sent over UALink (NPA targets)"};
  Counter light_{stats_, "invalidations_lightweight", "count", "lightweight TLB invalidations"};
  Counter heavy_{stats_, "invalidations_heavyweight", "count",
                 "heavyweight TLB invalidations (remote shootdowns included)"};
  std::uint64_t posted_faults_ = 0;
  LostBytes posted_fault_bytes_;
};

}  // namespace podsim
