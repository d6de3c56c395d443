// GpuVm: the requester's MMU. Translates a compute agent's GPU virtual address through a TLB
// (and a page walk on a miss) into a local VRAM address or an NPA, then sends the access to
// VRAM or to the UALink port. An access to an unmapped or invalidated page completes as a
// fault and is never sent anywhere.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <unordered_map>

#include "models/gpuvm/gpuvm_config.hpp"
#include "models/gpuvm/page_table.hpp"
#include "models/mmu/tlb.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class GpuVm final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_target_socket<GpuVm, 32, PodProtocol> from_agent{"from_agent"};
  tlm_utils::simple_initiator_socket<GpuVm, 32, PodProtocol> to_vram{"to_vram"};
  // One per switch plane, bound in plane order; remote accesses spread by address hash.
  tlm_utils::multi_passthrough_initiator_socket<GpuVm, 32, PodProtocol> to_ports{"to_ports"};

  GpuVm(sc_core::sc_module_name name, const GpuVmConfig& cfg, AccelId self, std::uint32_t planes,
        Bytes plane_interleave);

  // The plane (port) an access to NPA byte address `npa` takes.
  std::uint32_t plane_of(std::uint64_t npa) const;

  // -- programming interface (the driver's page-table updates)
  void map_page(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte);
  void unmap_page(std::uint16_t vmid, std::uint64_t va_page);
  // Heavyweight invalidation: drops every TLB entry of the address space.
  void invalidate_tlb(std::uint16_t vmid);
  // A remote shootdown (the snapshot always flushes everything): every address space.
  void invalidate_all();
  // Device reset: no page tables, an empty TLB.
  void reset();
  const GpuPageTable* page_table(std::uint16_t vmid) const;

  const StatGroup& stat_group() const override { return stats_; }
  const GpuVmConfig& config() const { return cfg_; }

 private:
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw_port(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                             sc_core::sc_time& d);
  void translate(tlm::tlm_generic_payload* gp);

  GpuVmConfig cfg_;
  AccelId self_;
  std::uint32_t planes_;
  unsigned interleave_shift_;
  Tlb<Pte> tlb_;
  std::unordered_map<std::uint16_t, GpuPageTable> tables_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;

  StatGroup stats_;
  Counter translations_{stats_, "translations", "count", "accesses translated"};
  Counter tlb_hits_{stats_, "tlb_hits", "count", "translations that hit in the TLB"};
  Counter tlb_misses_{stats_, "tlb_misses", "count", "translations that needed a page walk"};
  Counter faults_{stats_, "faults", "count",
                  "accesses to unmapped or invalidated pages (completed as faults, not served)"};
  Counter local_{stats_, "local_accesses", "count", "accesses sent to local VRAM"};
  Counter remote_{stats_, "remote_accesses", "count", "accesses sent over UALink (NPA targets)"};
  Counter invalidations_{stats_, "tlb_invalidations", "count", "TLB invalidations requested"};
};

}  // namespace podsim
