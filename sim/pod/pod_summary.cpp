#include "sim/pod/pod_summary.hpp"

#include <stdexcept>

#include <algorithm>

#include <fmt/format.h>

#include "fabric/traffic.hpp"

namespace podsim {

PodSummary::PodSummary(std::uint32_t planes, Time sample_interval)
    : breakdown_(stats_, "remote_breakdown", "ns",
                 "mean time of a remote access in each hop, all GPUs (parts add up to the mean "
                 "remote latency)",
                 ComputeAgent::breakdown_parts(), kPsPerNs),
      bandwidth_(stats_, "achieved_bandwidth", "GB/s",
                 "remote payload bytes delivered per second over the access phases, all GPUs (lost "
                 "posted stores left out)",
                 [this] { return achieved_bandwidth() / 1e9; }),
      phase_time_(stats_, "access_phase_time", "ns",
                  "from the first access issued to the last completed (a posted store: landed)",
                  [this] { return access_phase().as_ns(); }),
      plane_balance_(
          stats_, "plane_balance", "ratio",
          "least over most wire bytes the GPUs sent on any switch plane (1: even; data and "
          "the driver's control writes)",
          [this] { return plane_balance(); }),
      efficiency_(stats_, "payload_efficiency", "ratio",
                  "payload bytes per wire byte over every GPU port (headers, granules, DL "
                  "framing and Ethernet overhead; data and the driver's control writes)",
                  [this] { return payload_efficiency(); }),
      m_breakdown_(measured_, "remote_breakdown", "ns",
                   "mean time of a measured remote access in each hop, all GPUs",
                   ComputeAgent::breakdown_parts(), kPsPerNs),
      m_bandwidth_(measured_, "achieved_bandwidth", "GB/s",
                   "measured remote payload bytes delivered per second over the measured window",
                   [this] { return measured_bandwidth() / 1e9; }),
      m_start_(measured_, "window_start", "ns",
               "when the measured window began: the first measured remote access (one issued "
               "after its GPU's warm-up) was issued",
               [this] { return window_.any ? window_.start.as_ns() : 0.0; }),
      m_time_(measured_, "window_time", "ns",
              "the measured window: from the first measured remote access issued to the last "
              "completed (the rates over it are low by about one latency over its length)",
              [this] { return window_.length().as_ns(); }),
      series_({"remote", "local"}, sample_interval) {
  stats_.add_child(measured_);
  stats_.add_child(paths_);
  for (std::uint32_t p = 0; p < planes; ++p)
    plane_bytes_.push_back(std::make_unique<Counter>(
        stats_, fmt::format("plane{}.wire_bytes", p), "bytes",
        "wire bytes of requests and responses the GPUs sent on this plane (data, and the "
        "driver's control writes)"));
  for (std::size_t t = 1; t < driver::kMsgTypes; ++t) {
    const std::string n(driver::msg_name(static_cast<driver::MsgType>(t)));
    messages_.push_back(std::make_unique<Counter>(stats_, "messages." + n, "count",
                                                  "protocol messages of this type sent, all GPUs"));
  }
}

std::uint64_t PodSummary::paths_seen(const std::vector<std::unique_ptr<GpuNode>>& gpus) {
  std::uint64_t mask = 0;
  for (const auto& g : gpus) {
    if (!g) continue;  // another rank's
    const auto& by = g->agent.remote_latency_by_switches();
    for (std::size_t n = 0; n < by.size() && n < 64; ++n)
      if (by[n]) mask |= 1ull << n;
  }
  return mask;
}

void PodSummary::gather(const std::vector<std::unique_ptr<GpuNode>>& gpus,
                        const InvariantLog& invariants, std::uint64_t paths,
                        const std::vector<bool>* owned) {
  paths |= paths_seen(gpus);
  for (std::size_t n = 0; n < 64; ++n)
    if (paths >> n & 1) path_via(n);
  auto counts = [&](const GpuNode& g) { return !owned || (*owned)[g.id()]; };
  for (const auto& g : gpus) {
    if (!g || !counts(*g)) continue;
    const driver::Driver& d = g->driver.driver();
    import_time_.merge(d.import_time());
    import_repeat_time_.merge(d.import_repeat_time());
    export_time_.merge(d.export_time());
    revoke_time_.merge(d.revoke_time());
    send_time_.merge(g->driver.send_time());
    for (std::size_t t = 1; t < driver::kMsgTypes; ++t)
      messages_[t - 1]->inc(d.messages_sent(static_cast<driver::MsgType>(t)));
    // A posted store is done for its issuer as it issues it; the phase and the window end no
    // earlier than it lands (here, at its target).
    if (const Time t = g->vram.posted_landed(); t > Time{}) phase_.cover(t, t);
    if (const Time t = g->vram.measured_posted_landed(); t > Time{}) window_.cover(t, t);
    // Posted stores lost: faulted in their own GPUVM (never sent), or refused at their target.
    posted_lost_.inc(g->npa_mmu.posted_lost() + g->gpuvm.posted_faults());
    lost_bytes_ += g->npa_mmu.posted_lost_bytes();
    lost_bytes_ += g->gpuvm.posted_fault_bytes();
    const ComputeAgent& a = g->agent;
    faults_.inc(a.faults());
    gpuvm_faults_.inc(a.gpuvm_faults());
    remote_faults_.inc(a.remote_faults());
    unreachable_.inc(a.unreachable());
    retries_.inc(a.retries());
    if (a.issued() == 0) continue;
    windowed_ = windowed_ || a.windowed();
    m_warmup_.inc(a.warmup_issued());
    m_latency_.merge(a.measured_latency());
    m_breakdown_.merge(a.measured_breakdown());
    m_bytes_ += a.measured_bytes();
    const auto halves = a.halves();
    for (int h = 0; h < 2; ++h) {
      halves_[h].count += halves[h].count;
      halves_[h].latency_ps += halves[h].latency_ps;
    }
    m_completed_.inc(a.measured_completed());
    max_phases_ = std::max<std::uint64_t>(max_phases_, a.phases());
    if (a.measured_first_issue() != Time::max() && a.measured_completed() > 0) {
      window_.cover(a.measured_first_issue(), a.measured_last_complete());
    }
    latency_.merge(a.remote_latency());
    path_local_.merge(a.local_latency());
    path_remote_.merge(a.remote_latency());
    const auto& by = a.remote_latency_by_switches();
    for (std::size_t n = 0; n < by.size(); ++n)
      if (by[n]) path_via(n).merge(*by[n]);
    breakdown_.merge(a.remote_breakdown());
    bytes_.inc(a.remote_bytes());
    reads_.inc(a.remote_reads());
    writes_.inc(a.remote_writes());
    phase_.cover(a.first_issue(), a.last_complete());
  }
  for (const auto& g : gpus)
    for (std::uint32_t p = 0; g && p < g->ports.size() && counts(*g); ++p) {
      const Egress& e = g->ports[p]->egress();
      plane_bytes_[p]->inc(e.wire_bytes_sent(TrafficClass::Request) +
                           e.wire_bytes_sent(TrafficClass::Response));
      payload_ += static_cast<double>(e.payload_bytes_sent());
      wire_ += static_cast<double>(e.wire_bytes_sent());
    }
  accesses_.inc(latency_.histogram().count());

  violations_.inc(invariants.violations().size());
}

Distribution& PodSummary::path_via(std::size_t n) {
  if (path_switches_.size() <= n) path_switches_.resize(n + 1);
  if (!path_switches_[n])
    path_switches_[n] = std::make_unique<Distribution>(
        paths_, "remote_" + ComputeAgent::switches_name(n), "ns",
        "latency of remote accesses whose request crossed this many switches, all GPUs", kPsPerNs);
  return *path_switches_[n];
}

void PodSummary::pack_extras(std::vector<std::uint64_t>& out) const {
  out.push_back(phase_.any);
  out.push_back(static_cast<std::uint64_t>(phase_.start.as_ps()));
  out.push_back(static_cast<std::uint64_t>(phase_.end.as_ps()));
  // Sums of byte counts: whole numbers far below 2^53, so exact as doubles in any order.
  out.push_back(static_cast<std::uint64_t>(payload_));
  out.push_back(static_cast<std::uint64_t>(wire_));
  out.push_back(window_.any | static_cast<std::uint64_t>(windowed_) << 1);
  out.push_back(static_cast<std::uint64_t>(window_.start.as_ps()));
  out.push_back(static_cast<std::uint64_t>(window_.end.as_ps()));
  out.push_back(m_bytes_);
  out.push_back(max_phases_);
  out.push_back(lost_bytes_.all);
  out.push_back(lost_bytes_.measured);
  for (const auto& h : halves_) {
    out.push_back(h.count);
    out.push_back(h.latency_ps);
  }
  series_.pack(out);
}

const std::uint64_t* PodSummary::merge_extras(const std::uint64_t* in, const std::uint64_t* end) {
  if (end - in < 16) throw std::runtime_error("pod summary: another rank's figures are cut short");
  auto at = [&](std::size_t i) { return Time::ps(static_cast<std::int64_t>(in[i])); };
  if (in[0] != 0) phase_.cover(at(1), at(2));
  payload_ += static_cast<double>(in[3]);
  wire_ += static_cast<double>(in[4]);
  windowed_ = windowed_ || (in[5] & 2) != 0;
  if (in[5] & 1) window_.cover(at(6), at(7));
  m_bytes_ += in[8];
  max_phases_ = std::max(max_phases_, in[9]);
  lost_bytes_ += LostBytes{in[10], in[11]};
  for (int h = 0; h < 2; ++h) {
    halves_[h].count += in[12 + 2 * h];
    halves_[h].latency_ps += in[13 + 2 * h];
  }
  return series_.merge_packed(in + 16, end);
}

std::vector<std::pair<std::string, const Distribution*>> PodSummary::latency_paths() const {
  std::vector<std::pair<std::string, const Distribution*>> out = {{"local", &path_local_},
                                                                  {"remote", &path_remote_}};
  for (std::size_t n = 0; n < path_switches_.size(); ++n)
    if (path_switches_[n])
      out.emplace_back("remote_" + ComputeAgent::switches_name(n), path_switches_[n].get());
  // With a warm-up, the measured window's remote latency too (the rows above are the run's).
  if (windowed_) out.emplace_back("remote_measured", &m_latency_);
  return out;
}

double PodSummary::achieved_bandwidth() const {
  const double t = access_phase().as_seconds();
  return t > 0 && bytes_.value() > lost_bytes_.all
             ? static_cast<double>(bytes_.value() - lost_bytes_.all) / t
             : 0.0;
}

double PodSummary::measured_bandwidth() const {
  const double t = window_.length().as_seconds();
  return t > 0 && m_bytes_ > lost_bytes_.measured
             ? static_cast<double>(m_bytes_ - lost_bytes_.measured) / t
             : 0.0;
}

double PodSummary::plane_balance() const {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& c : plane_bytes_) {
    lo = std::min(lo, c->value());
    hi = std::max(hi, c->value());
  }
  return hi ? static_cast<double>(lo) / static_cast<double>(hi) : 1.0;
}

std::uint64_t PodSummary::messages(driver::MsgType t) const {
  return messages_[static_cast<std::size_t>(t) - 1]->value();
}

}  // namespace podsim
