#include "sim/pod/pod_summary.hpp"

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
                 "remote payload bytes per second over the access phases, all GPUs",
                 [this] { return achieved_bandwidth() / 1e9; }),
      phase_time_(stats_, "access_phase_time", "ns",
                  "from the first access issued to the last completed",
                  [this] { return access_phase().as_ns(); }),
      plane_balance_(stats_, "plane_balance", "ratio",
                     "least over most data bytes the GPUs sent on any switch plane (1: even)",
                     [this] { return plane_balance(); }),
      efficiency_(stats_, "payload_efficiency", "ratio",
                  "data bytes per wire byte over every GPU port (headers, granules, DL "
                  "framing and Ethernet overhead)",
                  [this] { return payload_efficiency(); }),
      series_({"remote", "local"}, sample_interval) {
  stats_.add_child(paths_);
  for (std::uint32_t p = 0; p < planes; ++p)
    plane_bytes_.push_back(std::make_unique<Counter>(
        stats_, fmt::format("plane{}.wire_bytes", p), "bytes",
        "wire bytes of data traffic (requests and responses) the GPUs sent on this plane"));
  for (std::size_t t = 1; t < driver::kMsgTypes; ++t) {
    const std::string n(driver::msg_name(static_cast<driver::MsgType>(t)));
    messages_.push_back(std::make_unique<Counter>(stats_, "messages." + n, "count",
                                                  "protocol messages of this type sent, all GPUs"));
  }
}

void PodSummary::gather(const std::vector<std::unique_ptr<GpuNode>>& gpus,
                        const InvariantLog& invariants) {
  phase_start_ = Time::max();
  for (const auto& g : gpus) {
    const driver::Driver& d = g->driver.driver();
    import_time_.merge(d.import_time());
    import_repeat_time_.merge(d.import_repeat_time());
    export_time_.merge(d.export_time());
    revoke_time_.merge(d.revoke_time());
    send_time_.merge(g->driver.send_time());
    for (std::size_t t = 1; t < driver::kMsgTypes; ++t)
      messages_[t - 1]->inc(d.messages_sent(static_cast<driver::MsgType>(t)));
    const ComputeAgent& a = g->agent;
    faults_.inc(a.faults());
    retries_.inc(a.retries());
    if (a.issued() == 0) continue;
    latency_.merge(a.remote_latency());
    path_local_.merge(a.local_latency());
    path_remote_.merge(a.remote_latency());
    const auto& by = a.remote_latency_by_switches();
    if (path_switches_.size() < by.size()) path_switches_.resize(by.size());
    for (std::size_t n = 0; n < by.size(); ++n) {
      if (!by[n]) continue;
      if (!path_switches_[n])
        path_switches_[n] = std::make_unique<Distribution>(
            paths_, "remote_" + ComputeAgent::switches_name(n), "ns",
            "latency of remote accesses whose request crossed this many switches, all GPUs",
            kPsPerNs);
      path_switches_[n]->merge(*by[n]);
    }
    breakdown_.merge(a.remote_breakdown());
    bytes_.inc(a.remote_bytes());
    reads_.inc(a.remote_reads());
    writes_.inc(a.remote_writes());
    phase_start_ = std::min(phase_start_, a.first_issue());
    phase_end_ = std::max(phase_end_, a.last_complete());
  }
  if (phase_start_ == Time::max()) phase_start_ = phase_end_ = Time{};
  for (const auto& g : gpus)
    for (std::uint32_t p = 0; p < g->ports.size(); ++p) {
      const Egress& e = g->ports[p]->egress();
      plane_bytes_[p]->inc(e.wire_bytes_sent(TrafficClass::Request) +
                           e.wire_bytes_sent(TrafficClass::Response));
      payload_ += static_cast<double>(e.payload_bytes_sent());
      wire_ += static_cast<double>(e.wire_bytes_sent());
    }
  accesses_.inc(latency_.histogram().count());
  violations_.inc(invariants.violations().size());
}

std::vector<std::pair<std::string, const Distribution*>> PodSummary::latency_paths() const {
  std::vector<std::pair<std::string, const Distribution*>> out = {{"local", &path_local_},
                                                                  {"remote", &path_remote_}};
  for (std::size_t n = 0; n < path_switches_.size(); ++n)
    if (path_switches_[n])
      out.emplace_back("remote_" + ComputeAgent::switches_name(n), path_switches_[n].get());
  return out;
}

double PodSummary::achieved_bandwidth() const {
  const double t = access_phase().as_seconds();
  return t > 0 ? static_cast<double>(bytes_.value()) / t : 0.0;
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
