#include "models/vram/vram.hpp"

#include <algorithm>
#include <cstring>

namespace podsim {

Vram::Vram(sc_core::sc_module_name name, const VramConfig& cfg)
    : sc_module(name),
      cfg_(cfg),
      alloc_(cfg.capacity.count() / 4096),
      channel_free_(cfg.channels),
      utilisation_(stats_, "channel_utilisation", "ratio",
                   "mean fraction of simulated time the channels spent transferring data", [this] {
                     double t = sim_now().as_seconds();
                     return t > 0 ? xfer_busy_total_.as_seconds() / (t * cfg_.channels) : 0.0;
                   }) {
  in.register_nb_transport_fw(this, &Vram::fw);
  spawn_method("arrive", arrivals_.event(),
               [this] { arrivals_.drain([this](const Arrival& a) { serve(a); }); });
}

tlm::tlm_sync_enum Vram::fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                            sc_core::sc_time& d) {
  arrivals_.push(sim_now() + from_sc(d), Arrival{&gp, id});
  return tlm::TLM_ACCEPTED;
}

void Vram::serve(const Arrival& arr) {
  tlm::tlm_generic_payload& gp = *arr.gp;
  Access& a = access_of(gp);
  const Time now = sim_now();
  a.stamp(HopKind::Vram, now);

  const std::uint64_t pa = gp.get_address();
  const unsigned ch = channel_of(pa);
  const Time start = std::max(now, channel_free_[ch]);
  const Time xfer = cfg_.channel_bandwidth.transfer_time(Bytes(a.size));
  channel_free_[ch] = start + xfer;
  xfer_busy_total_ += xfer;
  queue_delay_.record(start - now);

  if (a.op == AccessOp::Read) {
    reads_.inc();
    bytes_read_.inc(a.size);
    if (gp.get_data_ptr()) read_bytes(pa, gp.get_data_ptr(), a.size);
  } else {
    writes_.inc();
    bytes_written_.inc(a.size);
    if (gp.get_data_ptr()) write_bytes(pa, gp.get_data_ptr(), a.size);
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  tlm::tlm_phase ph = tlm::BEGIN_RESP;
  sc_core::sc_time d = to_sc(start + xfer + cfg_.access_latency - now);
  in[arr.socket]->nb_transport_bw(gp, ph, d);
}

void Vram::reset() {
  alloc_ = VramPageAllocator(cfg_.capacity.count() / 4096);
  store_.clear();
}

void Vram::read_bytes(std::uint64_t pa, unsigned char* out, std::size_t n) const {
  while (n > 0) {
    std::uint64_t page = pa >> 12, off = pa & 4095;
    std::size_t chunk = std::min<std::size_t>(n, 4096 - off);
    auto it = store_.find(page);
    if (it == store_.end())
      std::memset(out, 0, chunk);
    else
      std::memcpy(out, it->second->data() + off, chunk);
    out += chunk;
    pa += chunk;
    n -= chunk;
  }
}

void Vram::write_bytes(std::uint64_t pa, const unsigned char* in, std::size_t n) {
  while (n > 0) {
    std::uint64_t page = pa >> 12, off = pa & 4095;
    std::size_t chunk = std::min<std::size_t>(n, 4096 - off);
    auto& slot = store_[page];
    if (!slot) slot = std::make_unique<Page>(Page{});
    std::memcpy(slot->data() + off, in, chunk);
    in += chunk;
    pa += chunk;
    n -= chunk;
  }
}

}  // namespace podsim
