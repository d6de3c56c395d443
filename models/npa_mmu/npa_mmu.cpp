#include "models/npa_mmu/npa_mmu.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <string>

namespace podsim {

NpaMmu::NpaMmu(sc_core::sc_module_name name, const NpaMmuConfig& cfg, NpaAddrMode mode,
               AccelId self, InvariantLog* invariants, Dispatcher& events, std::uint64_t seed)
    : sc_module(name),
      cfg_(cfg),
      mode_(mode),
      self_(self),
      invariants_(invariants),
      mmu_(cfg, Rng::for_component(seed, std::string(this->name()))),
      arrivals_(events, queue_name(*this, "arrivals"),
                [this](tlm::tlm_generic_payload* gp) { translate(gp); }),
      to_vram_lane_(
          [this] { return to_vram.operator->(); },
          [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) { answer(gp, d); }) {
  arrivals_.fetch_ahead<&prefetch_packet_item>();
  from_ports.register_nb_transport_fw(this, &NpaMmu::fw);
  from_ports.register_b_transport(this, &NpaMmu::b_transport);
  to_vram.register_nb_transport_bw(this, &NpaMmu::bw);
}

std::uint64_t NpaMmu::key_of(std::uint64_t npa, AccelId requester) const {
  std::uint64_t page = (npa >> kPageShift) & kNpaWindowPageMask;
  if (mode_ == NpaAddrMode::SourceIdentification)
    page |= static_cast<std::uint64_t>(requester) << kNpaWindowPageBits;
  return page;
}

void NpaMmu::end_of_elaboration() {
  for (unsigned i = 0; i < from_ports.size(); ++i)
    to_ports_.emplace_back([this, i] { return from_ports[static_cast<int>(i)]; });
}

tlm::tlm_sync_enum NpaMmu::fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d) {
  if (ph == tlm::BEGIN_REQ) [[likely]]
    return accept_request(arrivals_, gp, ph, d);
  if (ph == tlm::END_RESP) return to_ports_[static_cast<std::size_t>(id)].end_response(gp);
  phase_error(name(), ph);
}

tlm::tlm_sync_enum NpaMmu::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                              sc_core::sc_time& d) {
  if (ph == tlm::END_REQ) return to_vram_lane_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  to_vram_lane_.begin_response(gp);
  answer(gp, d);
  return tlm::TLM_COMPLETED;
}

void NpaMmu::answer(tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
  const auto plane = static_cast<int>(access_of(gp).plane);
  if (const Access& a = access_of(gp); a.posted) {  // nobody waits for it: our reference goes
    if (a.status != AccessStatus::Ok && a.mailbox == MailboxWrite::None) {
      posted_lost_.inc();
      posted_lost_bytes_.add(a);
    }
    gp.release();
    return;
  }
  to_ports_[static_cast<std::size_t>(plane)].respond(gp, d);
}

bool NpaMmu::resolve(Access& a, tlm::tlm_generic_payload& gp, Time at, Time& done) {
  done = at;
  if (!enabled_) [[unlikely]] {
    disabled_.inc();
    a.status = AccessStatus::RemoteFault;
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  translations_.inc();
  const auto t = mmu_.translate(0, key_of(a.npa, a.src), at, &table_);
  (t.l1_hit || t.l2_hit ? tlb_hits_ : tlb_misses_).inc();
  done = t.done;
  const Pte pte = t.pte.value_or(Pte{});
  if (!pte.valid() || pte.retry) {
    (pte.valid() ? retries_ : faults_).inc();
    a.status = pte.valid() ? AccessStatus::Retry : AccessStatus::RemoteFault;
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  if (cfg_.check_grant_tags && pte.tag != 0 && a.grant != pte.tag) {  // a stale mapping
    tag_mismatches_.inc();
    a.status = AccessStatus::RemoteFault;
    gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return false;
  }
  check_granted(a, pte, at);
  a.pa = (pte.frame << kPageShift) | (a.npa & (kPageSize - 1));
  gp.set_address(a.pa);
  return true;
}

void NpaMmu::translate(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
  a.stamp(HopKind::NpaMmu, now);
  Time done;
  const bool on = resolve(a, *gp, now, done);
  const sc_core::sc_time d = to_sc(done - now);
  if (!on) {
    answer(*gp, d);
    return;
  }
  to_vram_lane_.send(*gp, d);
}

void NpaMmu::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  Access* a = gp.get_extension<Access>();
  if (!a) {  // whose NPA window it is depends on the requester, named only in the Access
    gp.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    return;
  }
  Time done;
  const bool on = resolve(*a, gp, sim_now() + from_sc(delay), done);
  delay = to_sc(done - sim_now());
  if (on) to_vram->b_transport(gp, delay);
}

void NpaMmu::check_granted(const Access& a, const Pte& pte, Time at) {
  if (!invariants_ || pte.tag == 0) return;  // tag 0: the rings' receive pages
  if (pte.tag != last_tag_) {
    const auto g = grants_.find(pte.tag);
    last_tag_ = pte.tag;
    last_grants_ = g == grants_.end() ? nullptr : &g->second;
  }
  if (last_grants_ && last_grants_->live.test(a.src)) [[likely]]
    return;
  report_ungranted(a, pte, at);
}

void NpaMmu::report_ungranted(const Access& a, const Pte& pte, Time at) {
  if (last_grants_ && last_grants_->released.test(a.src))
    invariants_->report(at, fmt::format("gpu{} served an access from gpu{} to export {:016x} "
                                        "(NPA {:#x}) after gpu{} had released it",
                                        self_, a.src, pte.tag, a.npa, a.src));
  else
    invariants_->report(at, fmt::format("gpu{} served an access from gpu{} to export {:016x} "
                                        "(NPA {:#x}), which gpu{} was never granted (a stale "
                                        "mapping into a reused NPA range)",
                                        self_, a.src, pte.tag, a.npa, a.src));
}

namespace {
// What the NPA VM maps a key to: a writable VRAM page.
Pte vram_pte(std::uint64_t frame, std::uint64_t tag, std::uint8_t fragment) {
  Pte pte;
  pte.target = PteTarget::Vram;
  pte.writable = true;
  pte.frame = frame;
  pte.tag = tag;
  pte.fragment = fragment;
  return pte;
}
}  // namespace

void NpaMmu::map_page(std::uint64_t key, std::uint64_t vram_page, std::uint64_t tag,
                      std::uint8_t fragment) {
  table_.map(key, vram_pte(vram_page, tag, fragment));
}

void NpaMmu::map_contiguous(std::uint64_t first_key, std::uint64_t pages, std::uint64_t first_frame,
                            std::uint64_t tag) {
  table_.map_contiguous(first_key, pages, vram_pte(first_frame, tag, 0));
}

void NpaMmu::map(std::uint64_t first_key, std::span<const std::uint64_t> vram_pages,
                 std::uint64_t tag, std::uint8_t max_fragment) {
  const Pte proto = vram_pte(0, tag, max_fragment);  // frames from FragmentedPtes
  auto frame = [vram_pages](std::uint64_t i) { return vram_pages[i]; };
  table_.map(first_key, vram_pages.size(),
             FragmentedPtes(proto, first_key, vram_pages.size(), frame));
}

void NpaMmu::set_retry(std::uint64_t key, bool retry) {
  // A page set apart inside a fragment: the fragment no longer holds (a TLB entry filled from
  // any of its pages would cover this one, retry or not), so its pages lose it. Mapping the
  // page again (NpaMmu::map) gives them the largest fragments that hold again.
  const Pte pte = table_.lookup(key);
  if (retry && pte.fragment > 0) {
    const std::uint64_t n = 1ull << pte.fragment;
    table_.update(key & ~(n - 1), n, [](Pte& p) { p.fragment = 0; });
  }
  table_.update(key, [retry](Pte& p) { p.retry = retry; });
}

void NpaMmu::set_retry(std::uint64_t first_key, std::uint64_t pages, bool retry) {
  table_.update(first_key, pages, [retry](Pte& p) { p.retry = retry; });
}

void NpaMmu::unmap_page(std::uint64_t key) {
  table_.unmap(key);
}

void NpaMmu::unmap(std::uint64_t first_key, std::uint64_t pages) {
  table_.unmap(first_key, pages);
}

Time NpaMmu::flush_tlb(FlushKind kind) {
  flushes_.inc();
  return mmu_.flush(kind);
}

bool NpaMmu::any_mapped(std::uint64_t first_key, std::uint64_t pages) const {
  return table_.any_mapped(first_key, pages);
}

void NpaMmu::mark_released(std::uint64_t tag, AccelId importer) {
  Grants& g = grants_[tag];
  if (g.live.test(importer)) g.released.set(importer);
  g.live.reset(importer);
  last_tag_ = 0;  // the entry may be new: look again
}

void NpaMmu::mark_granted(std::uint64_t tag, AccelId importer) {
  Grants& g = grants_[tag];
  g.live.set(importer);
  g.released.reset(importer);
  last_tag_ = 0;
}

void NpaMmu::reset() {
  enabled_ = true;  // the device comes back activated (its down time covers the bring-up)
  table_.clear();
  grants_.clear();
  last_tag_ = 0;
  last_grants_ = nullptr;
  mmu_.flush(FlushKind::Heavyweight);
}

void NpaMmu::digest(Digest& d) const {
  table_.digest(d);
  std::vector<std::uint64_t> tags;
  for (const auto& kv : grants_)
    tags.push_back(kv.first);
  std::sort(tags.begin(), tags.end());
  for (std::uint64_t t : tags) {
    d.add(t);
    const Grants& g = grants_.at(t);
    for (std::size_t i = 0; i < kMaxAccels; ++i)
      if (g.live.test(i)) d.add(i);
    d.add(~std::uint64_t{0});
    for (std::size_t i = 0; i < kMaxAccels; ++i)
      if (g.released.test(i)) d.add(i);
  }
}

void NpaMmu::digest_caches(Digest& d) const {
  mmu_.digest(d);
}

}  // namespace podsim
