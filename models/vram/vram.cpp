#include "models/vram/vram.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace podsim {

namespace {
VramPageAllocator make_allocator(const VramConfig& cfg, Rng rng) {
  using P = VramPageAllocator::Policy;
  const P policy = cfg.allocation == VramAllocation::Scattered ? P::Scattered
                   : cfg.allocation == VramAllocation::Blocks  ? P::Blocks
                                                               : P::FirstFit;
  const Bytes run = cfg.allocation == VramAllocation::Blocks ? cfg.block_size : cfg.scatter_run;
  return VramPageAllocator(cfg.capacity.count() / kPageSize, policy, run.count() / kPageSize,
                           cfg.clear_on_free, rng);
}
}  // namespace

Vram::Vram(sc_core::sc_module_name name, const VramConfig& cfg, Dispatcher& events,
           std::uint64_t seed)
    : sc_module(name),
      channels_(cfg.channels()),
      channel_magic_(~std::uint64_t{0} / cfg.channels() + 1),
      interleave_shift_(static_cast<unsigned>(__builtin_ctzll(cfg.interleave.count()))),
      access_latency_(cfg.access_latency),
      channel_free_(channels_),
      channel_bytes_(stats_, "channel_bytes", "bytes",
                     "bytes each channel moved (requests and clearing)", channels_),
      functional_data_(cfg.functional_data),
      cfg_(cfg),
      alloc_(make_allocator(cfg, Rng::for_component(seed, std::string(this->name())))),
      arrivals_(events, queue_name(*this, "arrivals"), [this](const Arrival& a) { serve(a); }),
      cleared_(events, queue_name(*this, "cleared"),
               [this](const Cleared& c) {
                 if (c.epoch == epoch_) page_cleared(c.page);
               }),
      seed_(seed),
      utilisation_(stats_, "channel_utilisation", "ratio",
                   "mean fraction of simulated time the channels spent transferring data",
                   [this] {
                     double t = sim_now().as_seconds();
                     return t > 0 ? xfer_busy_total_.as_seconds() / (t * channels_) : 0.0;
                   }),
      balance_(stats_, "channel_balance", "ratio",
               "least over most bytes any channel moved (1: evenly spread)",
               [this] {
                 const auto& v = channel_bytes_.values();
                 const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
                 return *hi ? static_cast<double>(*lo) / static_cast<double>(*hi) : 1.0;
               }),
      pinned_(stats_, "pinned_pages", "count", "pages pinned at the end of the run",
              [this] { return static_cast<double>(alloc_.pinned_pages()); }),
      measured_(stats_, "channel time, all channels, in measured_window_ps, every request counted",
                "from the first measured access (one issued after its GPU's warm-up: "
                "workload.traffic.warmup) reaching the VRAM to the last one done",
                "measured_channel_utilisation",
                "mean fraction of the time the channels spent transferring while the VRAM "
                "served measured traffic: measured_busy_ps over measured_window_ps and the "
                "channels",
                static_cast<double>(cfg.channels())) {
  for (std::uint64_t n = 0; n <= 8; ++n)  // requests move 64-512 bytes (an atomic, twice)
    transfer_.push_back(cfg.channel_bandwidth.transfer_time(Bytes(64 * n)));
  arrivals_.fetch_ahead<&Vram::fetch_packet>();
  in.register_nb_transport_fw(this, &Vram::fw);
  in.register_b_transport(this, &Vram::b_transport);
}

void Vram::end_of_elaboration() {
  for (unsigned i = 0; i < in.size(); ++i)
    responses_.emplace_back([this, i] { return in[static_cast<int>(i)]; });
}

tlm::tlm_sync_enum Vram::fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                            sc_core::sc_time& d) {
  if (ph == tlm::BEGIN_REQ) [[likely]]
    return accept_request(arrivals_, gp, ph, d, Arrival{&gp, id});
  if (ph == tlm::END_RESP) return responses_[static_cast<std::size_t>(id)].end_response(gp);
  phase_error(name(), ph);
}

Time Vram::occupy(std::uint64_t pa, std::uint64_t bytes, Time earliest) {
  const unsigned ch = channel_of(pa);
  const Time start = std::max(earliest, channel_free_[ch]);
  const Time xfer = bytes % 64 == 0 && bytes / 64 < transfer_.size()
                        ? transfer_[bytes / 64]
                        : cfg_.channel_bandwidth.transfer_time(Bytes(bytes));
  channel_free_[ch] = start + xfer;
  xfer_busy_total_ += xfer;
  channel_bytes_.add(ch, bytes);
  return start + xfer;
}

void Vram::serve(const Arrival& arr) {
  tlm::tlm_generic_payload& gp = *arr.gp;
  Access& a = access_of(gp);
  const Time now = sim_now();
  a.stamp(HopKind::Vram, now);

  const std::uint64_t pa = gp.get_address();
  // An atomic reads and writes: twice the channel time.
  const std::uint64_t bytes = a.op == AccessOp::Atomic ? 2ull * a.size : a.size;
  const unsigned ch = channel_of(pa);
  queue_delay_.record(std::max(now, channel_free_[ch]) - now);
  const Time busy_before = xfer_busy_total_;
  const Time done = occupy(pa, bytes, now);
  // The window's busy time: every request from the first measured one to the last.
  const bool measured = a.measured != Measured::No;
  if (measured) measured_.arrived(now);
  measured_.did(xfer_busy_total_ - busy_before, done, measured);

  // What the response carries back: what a load or an atomic read here; a store's bytes are
  // its issuer's already.
  a.data_bytes = apply(a.op, pa, functional_data_ || a.sync ? gp.get_data_ptr() : nullptr, a.size);
  if (a.mailbox != MailboxWrite::None) [[unlikely]]
    if (mailbox_watch_) mailbox_watch_(a, done + access_latency_);
  if (unanswered(a)) {  // a posted store: done, and nobody waits for it
    if (a.posted && a.mailbox == MailboxWrite::None) {
      posted_landed_ = std::max(posted_landed_, done);
      if (measured) m_posted_landed_ = std::max(m_posted_landed_, done);
    }
    gp.release();
    return;
  }
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  responses_[static_cast<std::size_t>(arr.socket)].respond(gp, to_sc(done + access_latency_ - now));
}

std::uint16_t Vram::apply(AccessOp op, std::uint64_t pa, unsigned char* data, std::uint32_t size) {
  switch (op) {
    case AccessOp::Read:
      reads_.inc();
      bytes_read_.inc(size);
      if (data) data_.read(pa, data, size);
      break;
    case AccessOp::Write:
      writes_.inc();
      bytes_written_.inc(size);
      if (data) data_.write(pa, data, size);
      break;
    case AccessOp::Atomic: {
      // Fetch-and-add of 64-bit lanes: the old values go back, the sums stay.
      atomics_.inc();
      bytes_read_.inc(size);
      bytes_written_.inc(size);
      if (data) {
        unsigned char old[Access::kMaxData];
        data_.read(pa, old, size);
        unsigned char sum[Access::kMaxData];
        for (std::uint32_t off = 0; off + 8 <= size; off += 8) {
          std::uint64_t x, y;
          std::memcpy(&x, old + off, 8);
          std::memcpy(&y, data + off, 8);
          x += y;
          std::memcpy(sum + off, &x, 8);
        }
        data_.write(pa, sum, size);
        std::memcpy(data, old, size);
      }
      break;
    }
  }
  return static_cast<std::uint16_t>(data && op != AccessOp::Write ? size : 0);
}

void Vram::b_transport(int, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay) {
  const Time at = sim_now() + from_sc(delay);
  if (gp.is_write() == gp.is_read()) {  // TLM_IGNORE_COMMAND: nothing to do
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
    return;
  }
  const std::uint64_t pa = gp.get_address();
  const std::uint32_t size = gp.get_data_length();
  if (gp.get_byte_enable_ptr() || gp.get_streaming_width() < size) {
    gp.set_response_status(gp.get_byte_enable_ptr() ? tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE
                                                    : tlm::TLM_BURST_ERROR_RESPONSE);
    return;
  }
  if (size == 0 || size > Access::kMaxData || pa + size > cfg_.capacity.count()) {
    gp.set_response_status(size == 0 || size > Access::kMaxData ? tlm::TLM_BURST_ERROR_RESPONSE
                                                                : tlm::TLM_ADDRESS_ERROR_RESPONSE);
    return;
  }
  Access* a = gp.get_extension<Access>();
  const AccessOp op = a ? a->op : gp.is_read() ? AccessOp::Read : AccessOp::Write;
  queue_delay_.record(std::max(at, channel_free_[channel_of(pa)]) - at);
  const Time done = occupy(pa, op == AccessOp::Atomic ? 2ull * size : size, at);
  const std::uint16_t wrote = apply(op, pa, functional_data_ ? gp.get_data_ptr() : nullptr, size);
  if (a && gp.get_data_ptr() == a->data.data()) a->data_bytes = wrote;
  gp.set_response_status(tlm::TLM_OK_RESPONSE);
  delay = to_sc(done + access_latency_ - sim_now());
}

// ---- allocation and clear-on-free -----------------------------------------------------------

std::uint64_t Vram::allocate(std::uint64_t n, AllocDone done) {
  const std::uint64_t id = next_waiter_++;
  if (n > alloc_.free_pages()) {
    done(std::nullopt);  // ENOMEM: not even counting the pages being cleared
    return id;
  }
  if (waiters_.empty()) {
    if (auto pages = alloc_.allocate(n)) {
      done(std::move(pages));
      return id;
    }
  }
  alloc_waits_.inc();
  waiters_.push_back(Waiter{id, n, sim_now(), std::move(done)});
  clear_next();
  return id;
}

void Vram::cancel_allocation(std::uint64_t id) {
  std::erase_if(waiters_, [id](const Waiter& w) { return w.id == id; });
}

void Vram::free(std::span<const std::uint64_t> pages) {
  alloc_.free(pages);
  clear_next();
}

// The clearing engine zeroes one page at a time, at its own rate and through the channels.
void Vram::clear_next() {
  if (clearing_) return;
  auto page = alloc_.next_dirty();
  if (!page) return;
  clearing_ = true;
  const Time now = sim_now();
  const Time start = std::max(now, engine_free_);
  engine_free_ = start + cfg_.clear_bandwidth.transfer_time(Bytes(kPageSize));
  Time done = engine_free_;
  const std::uint64_t granule = std::min<std::uint64_t>(cfg_.interleave.count(), kPageSize);
  for (std::uint64_t off = 0; off < kPageSize; off += granule)
    done = std::max(done, occupy(*page * kPageSize + off, granule, start));
  bytes_cleared_.inc(kPageSize);
  cleared_.push(done, Cleared{*page, epoch_});
}

void Vram::page_cleared(std::uint64_t page) {
  data_.erase_page(page);
  alloc_.mark_clean(page);
  clearing_ = false;
  serve_waiters();
  clear_next();
}

void Vram::serve_waiters() {
  while (!waiters_.empty()) {
    Waiter& w = waiters_.front();
    auto pages = alloc_.allocate(w.pages);
    if (!pages) return;
    alloc_wait_.record(sim_now() - w.since);
    AllocDone done = std::move(w.done);
    waiters_.pop_front();
    done(std::move(pages));
  }
}

void Vram::reset() {
  alloc_ = make_allocator(cfg_, Rng::for_component(seed_ + ++epoch_, std::string(name())));
  data_.clear();
  waiters_.clear();
  clearing_ = false;
}

void Vram::read_bytes(std::uint64_t pa, unsigned char* out, std::size_t n) const {
  if (cfg_.functional_data)
    data_.read(pa, out, n);
  else
    std::memset(out, 0, n);
}

void Vram::write_bytes(std::uint64_t pa, const unsigned char* in, std::size_t n) {
  if (cfg_.functional_data) data_.write(pa, in, n);
}

}  // namespace podsim
