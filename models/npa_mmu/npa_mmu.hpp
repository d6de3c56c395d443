// NpaMmu: the exporter's NPA VM. An incoming remote access carries an NPA; the NPA MMU turns
// the contiguous NPA range the driver handed out into the buffer's scattered VRAM pages
// (TLB, then a walk on a miss) and sends the access on to VRAM. An NPA with no valid PTE is
// answered as a remote fault and never reaches memory.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <unordered_map>

#include "models/mmu/tlb.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "models/npa_mmu/npa_mmu_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

struct NpaPte {
  bool valid = false;
  std::uint64_t vram_page = 0;
};

class NpaMmu final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_target_socket<NpaMmu, 32, PodProtocol> from_port{"from_port"};
  tlm_utils::simple_initiator_socket<NpaMmu, 32, PodProtocol> to_vram{"to_vram"};

  NpaMmu(sc_core::sc_module_name name, const NpaMmuConfig& cfg, NpaAddrMode mode);

  // -- programming interface. `key` is the NPA page as this exporter sees it: the window
  // page (ID stripped) in source-aliasing mode, requester<<29 | window page otherwise.
  void map_page(std::uint64_t key, std::uint64_t vram_page);
  void unmap_page(std::uint64_t key);
  void flush_tlb();
  std::uint64_t key_of(std::uint64_t npa, AccelId requester) const;
  std::size_t mapped_pages() const { return table_.size(); }

  const StatGroup& stat_group() const override { return stats_; }

 private:
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  void translate(tlm::tlm_generic_payload* gp);

  NpaMmuConfig cfg_;
  NpaAddrMode mode_;
  Tlb<NpaPte> tlb_;
  std::unordered_map<std::uint64_t, NpaPte> table_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;

  StatGroup stats_;
  Counter translations_{stats_, "translations", "count", "incoming NPA accesses translated"};
  Counter tlb_hits_{stats_, "tlb_hits", "count", "translations that hit in the NPA TLB"};
  Counter tlb_misses_{stats_, "tlb_misses", "count", "translations that needed an NPA walk"};
  Counter faults_{stats_, "faults", "count", "incoming accesses with no valid NPA mapping"};
  Counter flushes_{stats_, "tlb_flushes", "count", "NPA TLB flushes"};
};

}  // namespace podsim
