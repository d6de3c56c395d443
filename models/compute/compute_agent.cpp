#include "models/compute/compute_agent.hpp"

#include <fmt/format.h>

#include "models/compute/collective.hpp"
#include "sim/core/time_series.hpp"
#include "sim/core/timeline.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <cstring>

namespace podsim {

namespace {

// By a stamp's code (HopStamp::code: its hop and direction): its part of the per-hop
// breakdown, and whether it is a request entering a switch.
struct HopSlot {
  std::uint8_t slot = 0;
  std::uint8_t request_switch = 0;
};
constexpr std::array<HopSlot, 256> kHopSlots = [] {
  std::array<HopSlot, 256> t{};
  for (unsigned c = 0; c < 256; ++c) {
    const auto kind = static_cast<HopKind>(c & 0x7F);
    const bool response = c >> 7;
    t[c].slot = static_cast<std::uint8_t>(ComputeAgent::breakdown_slot(kind, response));
    t[c].request_switch = kind == HopKind::Switch && !response;
  }
  return t;
}();

}  // namespace

std::vector<std::string> ComputeAgent::breakdown_parts() {
  std::vector<std::string> parts;
  for (const char* dir : {"req.", "resp."})
    for (std::size_t k = 0; k < static_cast<std::size_t>(HopKind::Count); ++k)
      parts.push_back(dir + std::string(hop_name(static_cast<HopKind>(k))));
  return parts;
}

ComputeAgent::ComputeAgent(sc_core::sc_module_name name, const ComputeConfig& cfg, AccelId self,
                           PacketPool& pool, Dispatcher& events, Rng rng)
    : sc_module(name),
      self_(self),
      issue_latency_(cfg.issue_latency),
      pool_(pool),
      rng_(rng),
      breakdown_(stats_, "remote_breakdown", "ns",
                 "mean time of a remote access spent in each hop (req. = request, resp. = "
                 "response); the parts add up to the mean remote latency",
                 breakdown_parts(), kPsPerNs),
      cfg_(cfg),
      issue_timer_(events, queue_name(*this, "issue"), [this] { issue_more(); }),
      completions_(events, queue_name(*this, "completions"),
                   [this](tlm::tlm_generic_payload* gp) { complete(gp); }),
      requests_([this] { return to_gpuvm.operator->(); },
                [this](tlm::tlm_generic_payload& gp, const sc_core::sc_time& d) {
                  completions_.push(sim_now() + from_sc(d), &gp, order_key(gp));
                }) {
  completions_.fetch_ahead<&prefetch_packet_item>();
  to_gpuvm.register_nb_transport_bw(this, &ComputeAgent::bw);
}

void ComputeAgent::start(const TrafficConfig& traffic, std::vector<AccessRegion> regions,
                         std::uint16_t vmid, Time mean_interarrival,
                         std::optional<std::vector<TraceEntry>> replay) {
  traffic_ = traffic;
  regions_ = std::move(regions);
  local_.clear();
  remote_.clear();
  const std::uint64_t size = traffic.access_size.count(), stride = access_stride(size);
  for (const AccessRegion& r : regions_)
    (r.local ? local_ : remote_)
        .push_back(Pick{r.va, r.bytes < size ? 0 : (r.bytes - size) / stride + 1, r.bytes});
  stream_ = {};
  replaying_ = replay.has_value();
  replay_ = replay ? std::move(*replay) : std::vector<TraceEntry>{};
  replay_next_ = 0;
  vmid_ = vmid;
  mean_interarrival_ = mean_interarrival;
  active_ = true;
  phase_issued_ = 0;
  phase_start_ = sim_now();
  phase_end_ = sim_now() + traffic.duration;
  windowed_ = traffic.warmup > Time{} || traffic.warmup_accesses > 0;
  warm_end_ = phase_start_ + traffic.warmup;
  if (replaying_) {
    traffic_.accesses = replay_.size();
    traffic_.duration = Time{};
  } else if (regions_.empty()) {
    traffic_.accesses = 0;
    traffic_.duration = Time{};
  }
  ++phases_;
  issue_timer_.at(sim_now());
  check_done();
}

void ComputeAgent::run_program(coll::Runner& runner, std::uint16_t vmid) {
  runners_.push_back(&runner);
  vmid_ = vmid;
  traffic_ = TrafficConfig{};
  replaying_ = false;
  windowed_ = false;
  warm_end_ = Time{};
  active_ = true;
  if (tokens_.empty()) tokens_.resize(1024);
  issue_timer_.at(sim_now());
}

bool ComputeAgent::running(const coll::Runner& runner) const {
  return std::find(runners_.begin(), runners_.end(), &runner) != runners_.end();
}

void ComputeAgent::drive_program() {
  const Time now = sim_now();
  coll::Runner::Request q;
  Time wake = Time::max();
  bool ended = false;
  for (coll::Runner*& r : runners_) {
    while (r->next(now, q)) {
      const std::uint64_t id =
          issue(q.store ? AccessOp::Write : AccessOp::Read, q.va, q.size, q.data, q.sync);
      put_token(id, q.token, r);
    }
    if (r->done()) {
      r = nullptr;
      ended = true;
      continue;
    }
    wake = std::min(wake, r->wake_at());
  }
  if (ended) {
    std::erase(runners_, nullptr);
    if (runners_.empty()) active_ = false;
    notify_event(done_ev_);
  }
  if (wake != Time::max()) issue_timer_.at(std::max(wake, now));
}

void ComputeAgent::put_token(std::uint64_t id, std::uint32_t token, coll::Runner* runner) {
  for (;;) {
    TokenSlot& s = tokens_[id & (tokens_.size() - 1)];
    if (s.id == 0) {
      s = TokenSlot{id, token, runner};
      return;
    }
    // An access still in flight that many IDs ago: twice the room (rare).
    std::vector<TokenSlot> old(tokens_.size() * 2);
    old.swap(tokens_);
    for (const TokenSlot& t : old)
      if (t.id) tokens_[t.id & (tokens_.size() - 1)] = t;
  }
}

ComputeAgent::TokenSlot ComputeAgent::take_token(std::uint64_t id) {
  TokenSlot& s = tokens_[id & (tokens_.size() - 1)];
  assert(s.id == id);
  const TokenSlot t = s;
  s.id = 0;
  return t;
}

void ComputeAgent::abort() {
  ++epoch_;
  in_flight_ = 0;
  if (!runners_.empty()) {
    runners_.clear();
    std::fill(tokens_.begin(), tokens_.end(), TokenSlot{});
  }
  if (active_) {
    active_ = false;
    notify_event(done_ev_);
  }
}

bool ComputeAgent::may_issue() const {
  if (!active_) return false;
  if (traffic_.duration > Time{}) return sim_now() < phase_end_;
  return phase_issued_ < traffic_.accesses;
}

void ComputeAgent::check_done() {
  if (active_ && in_flight_ == 0 && !may_issue()) {
    active_ = false;
    notify_event(done_ev_);
  }
}

void ComputeAgent::issue_more() {
  if (!runners_.empty()) [[unlikely]] {
    drive_program();
    return;
  }
  if (replaying_) {
    // A trace: each access at its time, whatever is in flight.
    const Time now = sim_now();
    while (replay_next_ < replay_.size() && phase_start_ + replay_[replay_next_].at <= now) {
      const TraceEntry& e = replay_[replay_next_++];
      issue(e.op == TraceOp::Read    ? AccessOp::Read
            : e.op == TraceOp::Write ? AccessOp::Write
                                     : AccessOp::Atomic,
            e.va, e.size);
    }
    if (replay_next_ < replay_.size()) issue_timer_.at(phase_start_ + replay_[replay_next_].at);
  } else if (traffic_.injection == Injection::Poisson) {
    // One access now, the next after an exponentially distributed gap.
    if (may_issue()) {
      issue_one();
      const double gap =
          -std::log1p(-rng_.uniform()) * static_cast<double>(mean_interarrival_.as_ps());
      issue_timer_.at(sim_now() + Time::ps(static_cast<std::int64_t>(gap)));
    }
  } else {
    // Pointer chasing: one at a time, each waiting for the one before.
    const std::uint64_t limit =
        traffic_.pattern == Pattern::PointerChase ? 1 : traffic_.outstanding;
    while (in_flight_ < limit && may_issue())
      issue_one();
  }
  check_done();
}

std::uint64_t ComputeAgent::pick_address() {
  // Accesses are of access_size (what Pick::slots counts).
  const std::uint64_t size = traffic_.access_size.count();
  // Local or remote, by local_fraction (when both kinds of region exist).
  const std::vector<Pick>* pool = &remote_;
  if (local_.size() && (remote_.empty() || rng_.uniform() < traffic_.local_fraction))
    pool = &local_;
  if (traffic_.pattern == Pattern::Stream) {
    // Through the pool's regions in turn, one access after the other (local and remote
    // accesses each keep their own place).
    Stream& s = stream_[pool == &local_ ? 1 : 0];
    const Pick& r = (*pool)[s.region % pool->size()];
    const std::uint64_t va = r.va + s.offset;
    s.offset += access_stride(size);
    if (s.offset + size > r.bytes) {
      s.offset = 0;
      ++s.region;
    }
    return va;
  }
  std::size_t idx;
  if (traffic_.pattern == Pattern::Hotspot && pool->size() > 1) {
    idx = rng_.uniform() < traffic_.hotspot_fraction ? 0 : 1 + rng_.below(pool->size() - 1);
  } else {
    idx = rng_.below(pool->size());
  }
  const Pick& r = (*pool)[idx];
  return r.va + rng_.below(r.slots) * access_stride(size);
}

void ComputeAgent::issue_one() {
  const std::uint64_t size = traffic_.access_size.count();
  const std::uint64_t va = pick_address();
  AccessOp op = AccessOp::Write;
  if (rng_.uniform() < traffic_.atomic_fraction)
    op = AccessOp::Atomic;
  else if (rng_.uniform() < traffic_.read_fraction)
    op = AccessOp::Read;
  issue(op, va, static_cast<std::uint32_t>(size));
}

std::uint64_t ComputeAgent::issue(AccessOp op, std::uint64_t va, std::uint32_t size,
                                  const unsigned char* data, bool sync) {
  const Time now = sim_now();
  if (first_issue_ == Time::max()) first_issue_ = now;
  if (record_)
    record_->push_back(TraceEntry{now - phase_start_, self_,
                                  op == AccessOp::Read    ? TraceOp::Read
                                  : op == AccessOp::Write ? TraceOp::Write
                                                          : TraceOp::Atomic,
                                  va, size});
  const bool read = op == AccessOp::Read;
  // One request, one page (and one 256-byte block): the MMUs translate an access's first byte,
  // and VRAM serves its bytes from there on. Generated addresses, traces and collectives keep
  // to this; anything else would write past its page unseen.
  if (va % 256 + size > 256)
    throw std::logic_error(
        fmt::format("GPU {}: an access of {} B at {:#x} crosses a 256-byte "
                    "boundary",
                    self_, size, va));

  tlm::tlm_generic_payload& gp = pool_.acquire();
  Access& a = access_of(gp);
  a.id = (static_cast<std::uint64_t>(self_) << 48) | (issued_ + 1);  // control packets: top bit set
  a.kind = PacketKind::Request;
  a.op = op;
  a.src = self_;
  a.vmid = vmid_;
  a.size = size;
  a.vaddr = va;
  a.issued = now;
  a.tag = epoch_;
  if (now < warm_end_ || phase_issued_ < traffic_.warmup_accesses) {
    a.measured = Measured::No;
    ++warmup_issued_;
  } else {
    a.measured = Measured::Yes;
    if (m_first_issue_ == Time::max()) m_first_issue_ = now;
  }
  a.stamp(HopKind::Issue, now);
  gp.set_command(read ? tlm::TLM_READ_COMMAND : tlm::TLM_WRITE_COMMAND);
  gp.set_data_length(size);
  a.sync = sync;
  if (data) {
    std::memcpy(a.data.data(), data, size);
  } else if (!read && fill_data_) {
    // A recognisable pattern: the access id, repeated (an atomic adds it).
    for (std::uint64_t off = 0; off + 8 <= size; off += 8)
      std::memcpy(&a.data[off], &a.id, 8);
  }
  // A store's or atomic's bytes go to memory whatever they are (stale ones too, unfilled).
  a.data_bytes = static_cast<std::uint16_t>(data || !read ? size : 0);
  ++issued_;
  ++phase_issued_;
  if (op == AccessOp::Write && traffic_.posted_writes) {
    // Nothing will come back: the store is done as far as the wavefront is concerned.
    a.posted = true;
    posted_.inc();
    ++completed_;
    last_complete_ = now;
    // Remote unless it is in one of this GPU's own buffers (a store that then faults in GpuVm
    // is counted lost there).
    const bool local = std::any_of(local_.begin(), local_.end(),
                                   [&](const Pick& p) { return va - p.va < p.bytes; });
    if (!local) {
      remote_bytes_.inc(size);
      if (a.measured != Measured::No) note_window(size, now);  // no latency: none for the trend
    }
  } else {
    ++in_flight_;
  }
  send(gp, issue_latency_);
  return a.id;
}

// A posted store is complete when GpuVm takes it: the lane drops our reference then.
void ComputeAgent::send(tlm::tlm_generic_payload& gp, Time delay) {
  requests_.send(gp, to_sc(delay));
}

tlm::tlm_sync_enum ComputeAgent::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                    sc_core::sc_time& d) {
  if (ph == tlm::END_REQ) return requests_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  requests_.begin_response(gp);
  if (access_of(gp).posted) {  // answered by a target that answers every request
    gp.release();
    return tlm::TLM_COMPLETED;
  }
  completions_.push(sim_now() + from_sc(d), &gp, order_key(gp));
  return tlm::TLM_COMPLETED;
}

void ComputeAgent::complete(tlm::tlm_generic_payload* gp) {
  Access& a = access_of(*gp);
  const Time now = sim_now();
  if (a.tag != epoch_) {  // from a phase a device reset abandoned
    gp->release();
    return;
  }
  if (a.status == AccessStatus::Retry) {
    // Presence check failed: wait, then try the same access again (same issue time).
    // The trail restarts: everything up to the successful attempt counts as retry_wait.
    retries_.inc();
    a.kind = PacketKind::Request;
    a.status = AccessStatus::Ok;
    a.hop_count = 0;
    a.hops_dropped = 0;
    a.stamp(HopKind::RetryWait, a.issued);
    gp->set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    send(*gp, cfg_.retry_interval);
    return;
  }
  a.stamp(HopKind::Complete, now);
  if (timeline_ && timeline_->sample(self_)) note_access(a, now);
  --in_flight_;
  ++completed_;
  last_complete_ = now;

  switch (a.status) {
    case AccessStatus::Fault: faults_.inc(); break;
    case AccessStatus::RemoteFault: remote_faults_.inc(); break;
    case AccessStatus::Unreachable: unreachable_.inc(); break;
    case AccessStatus::Retry: break;
    case AccessStatus::Ok:
      if (a.dst == self_) {
        local_accesses_.inc();
        local_bytes_.inc(a.size);
        local_latency_.record(now - a.issued);
        if (series_) series_->add(1, now, a.size);
        break;
      }
      const Time latency = now - a.issued;
      latency_.record(latency);
      // With a warm-up, a measured access also goes into the window's own figures.
      const bool measured = a.measured != Measured::No;
      Breakdown* also = measured && windowed_ ? &m_breakdown_ : nullptr;
      // One pass over the trail: the per-hop breakdown, and the switches the request crossed
      // (each stamp looked up by its hop and direction: kHopSlots).
      std::size_t switches = 0;
      const std::size_t stamps = a.hop_count;
      if (a.hops_dropped == 0) {
        for (std::size_t i = 0; i + 1 < stamps; ++i) {
          const HopStamp& h = a.hops[i];
          const HopSlot s = kHopSlots[h.code()];
          switches += s.request_switch;
          const auto ps = static_cast<std::uint64_t>((a.hops[i + 1].at() - h.at()).as_ps());
          breakdown_.add(s.slot, ps);
          if (also) [[unlikely]]
            also->add(s.slot, ps);
        }
        breakdown_.add_sample();
        if (also) also->add_sample();
      } else {  // a trail with stamps missing: no breakdown
        for (std::size_t i = 0; i + 1 < stamps; ++i)
          switches += kHopSlots[a.hops[i].code()].request_switch;
      }
      latency_via(switches).record(latency);
      if (measured) {
        trend_.add(a.issued - m_first_issue_, latency);
        note_window(a.size, now);
        if (windowed_) m_latency_.record(latency);
      }
      if (a.op == AccessOp::Atomic) {
        atomics_.inc();
      } else {
        (a.op == AccessOp::Read ? read_latency_ : write_latency_).record(latency);
        (a.op == AccessOp::Read ? remote_reads_ : remote_writes_).inc();
      }
      remote_bytes_.inc(a.size);
      if (series_) series_->add(0, now, a.size);
      break;
  }
  if (!runners_.empty()) [[unlikely]] {
    // A program's access: its data (a load's) to its runner, which says what comes next.
    const bool ok = a.status == AccessStatus::Ok;
    const TokenSlot t = take_token(a.id);
    t.runner->completed(t.token, ok ? a.data.data() : nullptr, now);
    gp->release();
    drive_program();
    return;
  }
  gp->release();
  // Closed loop: a completion frees a slot for the next access. Poisson arrivals and traces
  // come at their own times, whatever completes.
  if (traffic_.injection == Injection::ClosedLoop && !replaying_)
    issue_more();
  else
    check_done();
}

Distribution& ComputeAgent::latency_via(std::size_t switches) {
  if (switches >= by_switches_.size()) by_switches_.resize(switches + 1);
  if (!by_switches_[switches])  // made the first time a request crosses this many switches
    by_switches_[switches] = std::make_unique<Distribution>(
        stats_, "remote_latency_" + switches_name(switches), "ns",
        "issue-to-completion latency of remote accesses whose request crossed this many "
        "switches",
        kPsPerNs);
  return *by_switches_[switches];
}

void ComputeAgent::note_access(const Access& a, Time now) {
  static const std::vector<std::string> parts = breakdown_parts();
  std::vector<Timeline::Hop> hops;
  for (std::size_t i = 0; i + 1 < a.hop_count; ++i) {
    const HopStamp& h = a.hops[i];
    if (a.hops[i + 1].at() <= h.at()) continue;
    const bool fabric = h.kind() == HopKind::Switch || h.kind() == HopKind::Link;
    hops.push_back({parts[breakdown_slot(h.kind(), h.response())], h.at(), a.hops[i + 1].at(),
                    fabric ? static_cast<std::int32_t>(a.plane) : -1, h.kind() == HopKind::Switch});
  }
  const char* op = a.op == AccessOp::Read ? "load" : a.op == AccessOp::Write ? "store" : "atomic";
  const char* status = a.status == AccessStatus::Ok            ? "ok"
                       : a.status == AccessStatus::Fault       ? "fault"
                       : a.status == AccessStatus::RemoteFault ? "remote fault"
                                                               : "unreachable";
  const std::string where = a.dst == self_ ? std::string("local") : fmt::format("gpu{}", a.dst);
  timeline_->access(self_, fmt::format("{} {}B {}", op, a.size, where), a.issued, now, hops,
                    fmt::format(R"({{"va": "{:#x}", "status": "{}", "latency_ns": {}}})", a.vaddr,
                                status, (now - a.issued).as_ns()));
}

}  // namespace podsim
