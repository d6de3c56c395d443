#include "fabric/egress.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace podsim {

Egress::Egress(const std::string& name, const PortConfig& port, const LinkConfig& link,
               Time tx_delay, Bytes queue_capacity, Dispatcher& events,
               const std::string& wake_name, Rng rng)
    : stats_(name),
      arbitration_(port.arbitration),
      capacity_(queue_capacity.count()),
      flit_error_(flit_error_probability(link, port)),
      tx_delay_(tx_delay),
      replay_penalty_(replay_penalty(link, port)),
      costs_(port),
      utilisation_(stats_, "utilisation", "ratio",
                   "fraction of simulated time the link was sending (replays included)",
                   [this] {
                     const double t = sim_now().as_seconds();
                     return t > 0 ? busy_.as_seconds() / t : 0.0;
                   }),
      efficiency_(stats_, "payload_efficiency", "ratio",
                  "data bytes per wire byte of what was sent (headers, granules, DL framing, "
                  "Ethernet overhead)",
                  [this] {
                    const double w = static_cast<double>(wire_bytes_.value());
                    return w > 0 ? static_cast<double>(payload_bytes_.value()) / w : 0.0;
                  }),
      measured_(stats_, "link time spent sending in measured_window_ps, every packet counted",
                "from the first measured access's packet (one issued after its GPU's warm-up: "
                "workload.traffic.warmup) reaching the queue to the last one sent",
                "measured_utilisation",
                "fraction of the time the link spent sending while it carried measured "
                "traffic: measured_busy_ps over measured_window_ps"),
      wake_(events, wake_name, [this] { pump(); }),
      rng_(rng),
      name_(name),
      port_(port) {
  credits_.fill(INT64_MAX / 4);  // until told the receiver's buffer
  occupancy_.report_buckets(true);
}

void Egress::set_peer_buffer(Bytes per_class) {
  credits_.fill(static_cast<std::int64_t>(per_class.count()));
}

bool Egress::has_space(TrafficClass tc, std::uint64_t tl) const {
  return capacity_ == 0 || queued_bytes_[static_cast<std::size_t>(tc)] + tl <= capacity_;
}

void Egress::enqueue(tlm::tlm_generic_payload& gp) {
  const Access& a = access_of(gp);
  enqueue(gp, traffic_class(a), costs_.tl_bytes(payload_bytes_on_wire(a)));
}

void Egress::enqueue(tlm::tlm_generic_payload& gp, TrafficClass cls, std::uint64_t tl) {
  const auto tc = static_cast<std::size_t>(cls);
  if (!measured_.open() && access_of(gp).measured != Measured::No) [[unlikely]]
    measured_.arrived(sim_now());
  occupancy_.record(queued_);
  if (queued_ == 0) waiting_since_ = sim_now();
  queues_[tc].push_back(Queued{&gp, tl, sim_now()});
  ++queued_;
  queued_bytes_[tc] += tl;
  pump();
}

void Egress::return_credits(TrafficClass tc, std::uint64_t tl, Time at) {
  // Returns come back in time order from one receiver; keep the list sorted regardless.
  pending_credits_.insert_sorted(
      CreditReturn{at, static_cast<std::uint32_t>(tl), static_cast<std::uint8_t>(tc)},
      [](const CreditReturn& x, const CreditReturn& y) { return x.at < y.at; });
  // A sender stalled for credits wakes when they arrive.
  if (stalled_since_ != Time::max()) wake_.at(std::max(at, sim_now()));
}

void Egress::absorb_credits(Time now) {
  while (!pending_credits_.empty() && pending_credits_.front().at <= now) {
    credits_[pending_credits_.front().tc] += static_cast<std::int64_t>(pending_credits_.front().tl);
    pending_credits_.pop_front();
  }
}

void Egress::pump() {
  const Time now = sim_now();
  if (now < free_at_) {
    wake_.at(free_at_);
    return;
  }
  if (link_ && link_->stalled_until() > now) [[unlikely]] {
    if (link_->stalled_until() != Time::max()) wake_.at(link_->stalled_until());
    return;
  }
  absorb_credits(now);
  bool blocked = false;
  for (std::size_t k = 0; k < kTrafficClasses; ++k) {
    // Class 0 (control) always first; round robin then starts at the data class whose turn
    // it is.
    std::size_t tc = k;
    if (k > 0 && arbitration_ == Arbitration::RoundRobin)
      tc = 1 + (next_data_class_ - 1 + (k - 1)) % (kTrafficClasses - 1);
    if (queues_[tc].empty()) continue;
    if (credits_[tc] < static_cast<std::int64_t>(queues_[tc].front().tl)) {
      blocked = true;
      continue;
    }
    if (stalled_since_ != Time::max()) {
      credit_stall_time_.inc(static_cast<std::uint64_t>((now - stalled_since_).as_ps()));
      stalled_since_ = Time::max();
    }
    commit(tc, now);
    if (tc > 0) next_data_class_ = 1 + tc % (kTrafficClasses - 1);
    if (queued_ > 0) wake_.at(free_at_);
    return;
  }
  if (blocked && stalled_since_ == Time::max()) {
    stalled_since_ = now;
    credit_stalls_.inc();
  }
  if (blocked && !pending_credits_.empty()) wake_.at(pending_credits_.front().at);
}

void Egress::commit(std::size_t tc, Time now) {
  const Queued q = queues_[tc].front();
  queues_[tc].pop_front();
  --queued_;
  waiting_since_ = now;
  queued_bytes_[tc] -= q.tl;
  credits_[tc] -= static_cast<std::int64_t>(q.tl);

  // DL flits completed while this packet goes out: each may fail its CRC and be replayed.
  Time penalty;
  if (flit_error_ > 0) {
    const std::uint64_t flit_payload = port_.dl_payload.count();
    const std::uint64_t before = tl_sent_ / flit_payload;
    tl_sent_ += q.tl;
    const std::uint64_t after = tl_sent_ / flit_payload;
    for (std::uint64_t f = before; f < after; ++f)
      if (rng_.uniform() < flit_error_) {
        replays_.inc();
        penalty += replay_penalty_;
      }
  }
  const Time ser = costs_.wire_time(q.tl);
  free_at_ = now + ser + penalty;
  busy_ += ser + penalty;
  replay_time_.inc(static_cast<std::uint64_t>(penalty.as_ps()));

  const Access& a = access_of(*q.gp);
  // The window's busy time: everything sent from the first measured packet's arrival to the
  // last measured packet's departure (the warm-up's packets still queued at its start too).
  measured_.did(ser + penalty, free_at_, a.measured != Measured::No);
  packets_.inc();
  tl_bytes_.inc(q.tl);
  payload_bytes_.inc(payload_bytes_on_wire(a));
  const std::uint64_t wire = costs_.wire_bytes(q.tl);
  wire_bytes_.inc(wire);
  class_wire_bytes_[tc] += wire;
  queue_delay_.record(now - q.since);
  if (also_class_delay_) (*also_class_delay_)[tc]->record(now - q.since);

  link_->send(side_, *q.gp, now + tx_delay_ + penalty);
  if (on_space_) on_space_();
}

std::string Egress::why_waiting() const {
  const Time now = sim_now();
  if (link_ && link_->stalled_until() > now)
    return link_->stalled_until() == Time::max()
               ? std::string("its link is stalled for good")
               : fmt::format("its link is stalled until {}", pretty(link_->stalled_until()));
  std::string why;
  for (std::size_t tc = 0; tc < kTrafficClasses; ++tc) {
    if (queues_[tc].empty()) continue;
    std::int64_t c = credits_[tc];
    for (std::size_t i = 0; i < pending_credits_.size(); ++i)
      if (pending_credits_[i].tc == tc && pending_credits_[i].at <= now)
        c += static_cast<std::int64_t>(pending_credits_[i].tl);
    if (c >= static_cast<std::int64_t>(queues_[tc].front().tl)) continue;
    why += fmt::format("{}class {}: {} B of credits, its first packet needs {} B",
                       why.empty() ? "" : "; ", tc, c, queues_[tc].front().tl);
  }
  return why.empty() ? std::string("the link is busy")
                     : "the receiver gives no credits (" + why + ")";
}

}  // namespace podsim
