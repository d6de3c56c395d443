// NpaMmu: the exporter's NPA VM. An incoming remote access carries an NPA; the NPA MMU turns
// the contiguous NPA range the driver handed out into the buffer's scattered VRAM pages
// (TLB, then a walk on a miss) and sends the access on to VRAM. An NPA with no valid PTE is
// answered as a remote fault, one whose PTE has X=1 (a revoke or a page move in progress) as
// a retry; neither reaches memory.
//
// It also keeps the pod's isolation invariant: an access is served from an export only to an
// importer the exporter's driver granted it to and has not taken back (a release, a revoke, a
// connection reset, a reset of this device), in every address mode. Each PTE carries the
// export it belongs to; the rings' receive pages (tag 0) take any sender's writes.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>

#include <bitset>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/mmu/mmu.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "models/npa_mmu/npa_mmu_config.hpp"
#include "sim/core/invariants.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class NpaMmu final : public sc_core::sc_module, public HasStats {
 public:
  // One per switch plane, bound in plane order: a response returns through its request's.
  tlm_utils::multi_passthrough_target_socket<NpaMmu> from_ports{"from_ports"};
  tlm_utils::simple_initiator_socket<NpaMmu> to_vram{"to_vram"};

  NpaMmu(sc_core::sc_module_name name, const NpaMmuConfig& cfg, NpaAddrMode mode, AccelId self,
         InvariantLog* invariants, Dispatcher& events, std::uint64_t seed = 1);

  // -- programming interface. `key` is the NPA page as this exporter sees it: the window
  // page (ID stripped) in source-aliasing mode, requester<<29 | window page otherwise.
  void map_page(std::uint64_t key, std::uint64_t vram_page, std::uint64_t tag,
                std::uint8_t fragment = 0);
  // Keys [first_key, first_key + vram_pages.size()) to those VRAM pages, with the largest
  // fragments that hold (best_fragment) up to 2^max_fragment pages, replacing what was there:
  // one pass.
  void map(std::uint64_t first_key, std::span<const std::uint64_t> vram_pages, std::uint64_t tag,
           std::uint8_t max_fragment = kMaxFragment);
  // Keys [first_key, first_key + pages) to VRAM pages first_frame, first_frame + 1, ...: as
  // map_page on each, in one step.
  void map_contiguous(std::uint64_t first_key, std::uint64_t pages, std::uint64_t first_frame,
                      std::uint64_t tag);
  void set_retry(std::uint64_t key, bool retry);
  void set_retry(std::uint64_t first_key, std::uint64_t pages, bool retry);
  void unmap_page(std::uint64_t key);
  void unmap(std::uint64_t first_key, std::uint64_t pages);
  // Invalidates the NPA VM's cached translations; what it costs.
  Time flush_tlb(FlushKind kind = FlushKind::Heavyweight);
  bool any_mapped(std::uint64_t first_key, std::uint64_t pages) const;
  std::uint64_t key_of(std::uint64_t npa, AccelId requester) const;
  std::size_t mapped_pages() const { return table_.mapped_pages(); }
  const PageTable& page_table() const { return table_; }
  // The driver granted export `tag` to `importer` (an NPA_RSP, or a direct setup's grant):
  // its accesses to the export are served rightly from now on.
  void mark_granted(std::uint64_t tag, AccelId importer);
  // `importer` no longer holds export `tag` (released, revoked, its connection reset):
  // serving it from now on breaks isolation.
  void mark_released(std::uint64_t tag, AccelId importer);
  // The NPA page table and the grants noted; what the MMU has cached.
  void digest(Digest& d) const;
  void digest_caches(Digest& d) const;
  // Device reset: no mappings, an empty TLB.
  void reset();
  // Incoming NPA translation on or off (activation's PSP command): off, every incoming
  // access is refused as a remote fault.
  void set_enabled(bool on) { enabled_ = on; }

  const StatGroup& stat_group() const override { return stats_; }
  std::uint64_t posted_lost() const { return posted_lost_.value(); }
  const LostBytes& posted_lost_bytes() const { return posted_lost_bytes_; }  // their payload

 private:
  tlm::tlm_sync_enum fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  // Translates `a` at `at`: true with the payload addressed to VRAM; false with it refused
  // (status and response set). `done`: when the translation ended.
  bool resolve(Access& a, tlm::tlm_generic_payload& gp, Time at, Time& done);
  void translate(tlm::tlm_generic_payload* gp);
  // A blocking (loosely timed) access: translated at once, then on to memory's b_transport.
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // The invariant: an access is served only to an importer holding a grant of the export.
  void check_granted(const Access& a, const Pte& pte, Time at);
  void report_ungranted(const Access& a, const Pte& pte, Time at);
  // An answer (from VRAM, or a refusal here) goes back through the request's port.
  void answer(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d);
  void end_of_elaboration() override;

  NpaMmuConfig cfg_;
  NpaAddrMode mode_;
  bool enabled_ = true;
  AccelId self_;
  InvariantLog* invariants_;
  MmuCore mmu_;
  PageTable table_;
  struct Grants {
    std::bitset<kMaxAccels> live;      // granted and not taken back
    std::bitset<kMaxAccels> released;  // granted once, taken back since (for the message)
  };
  std::unordered_map<std::uint64_t, Grants> grants_;  // by export tag
  std::uint64_t last_tag_ = 0;                        // the last export checked, and its grants
  const Grants* last_grants_ = nullptr;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;
  std::vector<ResponseLane> to_ports_;  // from_ports' response sides, by plane
  RequestLane to_vram_lane_;            // to_vram's request side

  StatGroup stats_;
  Counter translations_{stats_, "translations", "count", "incoming NPA accesses translated"};
  Counter tlb_hits_{stats_, "tlb_hits", "count", "translations that hit in a TLB"};
  Counter tlb_misses_{stats_, "tlb_misses", "count", "translations that needed a walk"};
  Counter faults_{stats_, "faults", "count", "incoming accesses with no valid NPA mapping"};
  Counter tag_mismatches_{stats_, "tag_mismatches", "count",
                          "incoming accesses refused for a grant tag not their PTE's "
                          "(check_grant_tags: stale mappings)"};
  Counter disabled_{stats_, "refused_disabled", "count",
                    "incoming accesses refused because NPA translation was off (not activated)"};
  Counter retries_{stats_, "retries", "count",
                   "incoming accesses answered with a retry (PTE.X = 1: revoke or page move)"};
  Counter flushes_{stats_, "tlb_flushes", "count", "NPA TLB flushes"};
  Counter posted_lost_{stats_, "posted_lost", "count",
                       "posted stores (workload.traffic.posted_writes) answered here with a retry "
                       "or a fault: nobody waits for the answer, so they are lost"};
  LostBytes posted_lost_bytes_;
};

}  // namespace podsim
