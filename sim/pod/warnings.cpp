#include "sim/pod/warnings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "fabric/framing.hpp"
#include "sim/pod/pod.hpp"

namespace podsim {

namespace {

// The config keys that govern the time an access spends in a hop.
std::vector<std::string> keys_governing(const std::string& hop, bool poisson) {
  // Where the traffic goes and how much of it: what makes a port or a switch output queue.
  std::vector<std::string> traffic = {
      "workload.targets", "workload.initiators", "workload.peers", "workload.traffic.pattern",
      poisson ? "workload.traffic.offered_load" : "workload.traffic.outstanding"};
  auto with_traffic = [&](std::vector<std::string> keys) {
    keys.insert(keys.end(), traffic.begin(), traffic.end());
    return keys;
  };
  if (hop == "issue") return {"gpu.compute.issue_latency"};
  if (hop == "gpuvm")
    return {"gpu.gpuvm (TLB entries, walkers, walk_level_latency)", "gpu.driver.max_fragment",
            "gpu.vram.allocation", "gpu.vram.block_size", "workload.buffer_size"};
  if (hop == "port_tx") return with_traffic({"fabric.port (lanes, lane_rate)", "fabric.planes"});
  if (hop == "link") return {"fabric.link"};
  if (hop == "switch")
    return with_traffic({"fabric.switch (latency, arbitration, buffers)", "fabric.topology"});
  if (hop == "port_rx") return with_traffic({"fabric.port"});
  if (hop == "npa_mmu")
    return {"gpu.npa_mmu (TLB entries, walkers)", "gpu.driver.max_fragment", "gpu.vram.allocation"};
  if (hop == "vram")
    return {"gpu.vram (channel_bandwidth, access_latency, interleave)",
            "workload.traffic.access_size"};
  if (hop == "retry_wait") return {"gpu.compute.retry_interval", "gpu.driver (revokes, migration)"};
  return {};
}

std::string key_root(const std::string& k) {  // "gpu.gpuvm (TLB ...)" -> "gpu.gpuvm"
  return k.substr(0, k.find(' '));
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string num(std::uint64_t n) {  // 1234567 -> 1,234,567
  std::string s = std::to_string(n), out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}

}  // namespace

// Accesses not served, and retried, in words.
static void served_warnings(const PodSummary& s, std::vector<RunWarning>& out) {
  if (s.faults() > 0) {
    std::vector<std::string> parts;
    if (s.gpuvm_faults())
      parts.push_back(
          fmt::format("{} found no valid mapping in their own GPUVM and were never "
                      "sent (an import unmapped by a revoke or a reset)",
                      num(s.gpuvm_faults())));
    if (s.remote_faults())
      parts.push_back(
          fmt::format("{} were refused by the exporter: no valid NPA mapping "
                      "(revoked, released, or the exporter reset since the import)",
                      num(s.remote_faults())));
    if (s.unreachable())
      parts.push_back(fmt::format("{} were sent to a GPU that was down", num(s.unreachable())));
    out.push_back(
        {"not_served", fmt::format("{} accesses were not served, beside {} completed: {}; they are "
                                   "not in the latency or bandwidth figures",
                                   num(s.faults()), num(s.remote_accesses()), join(parts, "; "))});
  }
  if (s.posted_lost() > 0)
    out.push_back(
        {"posted_lost",
         fmt::format(
             "{} posted stores were lost: they faulted in their own GPUVM (unmapped by a "
             "revoke: pod.gpuN.gpuvm.faults), or their target answered with a retry or a fault "
             "(its mapping revoked or gone as they landed: pod.gpuN.npa_mmu.posted_lost); "
             "nobody waits for a posted store's answer. A posted store is done for "
             "its GPU as it is issued, so the access phase can end, and the teardown "
             "revoke, with stores still queued in the fabric; they count in remote_bytes "
             "(sent), not in the bandwidths (delivered). Pace them below what their targets "
             "take (workload.traffic.offered_load), or use stores with responses",
             num(s.posted_lost()))});
  if (s.retries() > 0)
    out.push_back(
        {"retried", fmt::format("{} times an access was answered \"retry\" (its page being revoked "
                                "or moved: PTE.X) and issued again after "
                                "gpu.compute.retry_interval; the wait is in its latency "
                                "(retry_wait)",
                                num(s.retries()))});
  // An access whose hop trail outgrew its packet has no breakdown. No path podsim's topologies
  // make is that long (fabric/topology.cpp checks it as it compiles); if one ever is, it is said.
  const std::uint64_t remote = s.remote_latency().histogram().count();
  const std::uint64_t with = s.remote_breakdown().samples();
  if (with < remote)
    out.push_back({"breakdown_incomplete",
                   fmt::format("{} of {} remote accesses have no per-hop breakdown: their hop "
                               "trail outgrew a packet's {} stamps (Access::kMaxHops); "
                               "breakdown.csv is the mean over the other {}",
                               num(remote - with), num(remote), Access::kMaxHops, num(with))});
}

std::vector<RunWarning> run_warnings(const Pod& pod, const std::vector<std::string>& overrides) {
  std::vector<RunWarning> out;
  // A collective's results are its calls' times (collectives.csv), not an access phase's
  // window: what the access-phase warnings say about a window does not apply to them.
  if (pod.config().workload.kind == WorkloadKind::Collective ||
      pod.config().workload.kind == WorkloadKind::Model) {
    served_warnings(pod.summary(), out);
    return out;
  }
  const PodConfig& cfg = pod.config();
  const PodSummary& s = pod.summary();
  const TrafficConfig& t = cfg.workload.traffic;
  const Distribution& lat = s.windowed() ? s.measured_latency() : s.remote_latency();
  const LogHistogram& h = lat.histogram();
  const std::uint64_t measured = h.count();
  const double mean_ps = measured ? h.mean() : 0.0;
  const Time window = s.window().length();

  // Nothing measured at all, though accesses ran.
  if (s.windowed() && s.measured_accesses() == 0 && s.warmup_accesses() > 0)
    out.push_back({"window_too_short",
                   fmt::format("no remote access was measured: all {} accesses issued were in "
                               "the warm-up (workload.traffic.warmup {}, warmup_accesses {})",
                               num(s.warmup_accesses()), pretty(t.warmup), t.warmup_accesses)});

  // Posted stores in a closed loop: each completes as it is issued, so the loop issues them all
  // at once and nothing times the fabric.
  if (t.posted_writes && t.read_fraction < 1.0 && t.injection == Injection::ClosedLoop &&
      t.trace.empty() && s.measured_accesses() > 0)
    out.push_back({"posted_closed_loop",
                   "posted stores complete when issued, so a closed loop (outstanding) issues "
                   "them back to back in no time: the access phase, the window and the bandwidth "
                   "over it do not measure the fabric; use workload.traffic.injection=poisson "
                   "(offered_load) to pace them"});

  // More than one access phase on a GPU (a scenario): the window runs from the first to the
  // end of the last, the gaps between them included.
  if (s.max_phases() > 1 && s.measured_accesses() > 0)
    out.push_back({"window_spans_phases",
                   fmt::format("a GPU ran {} access phases: the measured window ({}) runs from "
                               "the first one's measured accesses to the last one's, whatever "
                               "lies between them (idle time, other steps), so rates and "
                               "utilisations over it are averages over all of that",
                               s.max_phases(), pretty(window))});

  // The window against the latency: the first accesses' flight (nothing delivered yet) and the
  // drain at the end weigh on every figure unless it is many latencies long.
  constexpr double kWindowLatencies = 20.0;
  bool short_window = false;
  if (measured > 0 && window > Time{} && mean_ps > 0) {
    const double ratio = static_cast<double>(window.as_ps()) / mean_ps;
    if (ratio < kWindowLatencies) {
      short_window = true;
      // What to change, scaled from what ran, with a margin (the window does not grow in
      // exact proportion: its drain stays).
      const double factor = 1.1 * kWindowLatencies / ratio;
      auto times = [&](double x) { return static_cast<std::uint64_t>(std::ceil(x * factor)); };
      std::string how;
      if (!t.trace.empty())
        how = fmt::format("a trace about {:.1f} times as long", factor);
      else if (cfg.workload.kind == WorkloadKind::Scenario)
        how = fmt::format("the access steps' accesses or duration about {:.1f} times as large",
                          factor);
      else if (t.duration > Time{})
        how = fmt::format("workload.traffic.duration={}",
                          pretty(Time::ps(static_cast<std::int64_t>(
                              times(static_cast<double>(t.duration.as_ps()))))));
      else
        how = fmt::format("workload.traffic.accesses={}", times(static_cast<double>(t.accesses)));
      out.push_back(
          {"window_too_short",
           fmt::format("the measured window ({}) is only {:.2g} times the mean latency ({}): "
                       "the first accesses' flight and the drain at the end weigh on every "
                       "figure (bandwidth and utilisation read low by about 1/{:.2g}); make it "
                       "at least {:.0f} times ({}): {}",
                       pretty(window), ratio, pretty(Time::ps(static_cast<std::int64_t>(mean_ps))),
                       ratio, kWindowLatencies,
                       pretty(Time::ps(static_cast<std::int64_t>(mean_ps * kWindowLatencies))),
                       how)});
    }
  }

  // Too few samples for the tail.
  constexpr std::uint64_t kEnough = 10'000;
  if (measured > 0 && measured < kEnough)
    out.push_back(
        {"too_few_accesses",
         measured >= 100
             ? fmt::format("only {} remote accesses were measured: the p99 rests on the {} "
                           "slowest; {} or more give it 100",
                           num(measured), measured / 100, num(kEnough))
             : fmt::format("only {} remote accesses were measured: too few for a p99 at all; "
                           "{} or more give it 100",
                           num(measured), num(kEnough))});

  // A latency still moving between the halves of the window.
  bool rising = false;
  if (s.half_count(0) >= 100 && s.half_count(1) >= 100) {
    const double a = static_cast<double>(s.half_mean(0).as_ps());
    const double b = static_cast<double>(s.half_mean(1).as_ps());
    rising = a > 0 && (b - a) / a > 0.10;
    if (a > 0 && std::abs(b - a) / a > 0.10)
      out.push_back(
          {"latency_trending",
           b > a ? fmt::format("the mean latency is still rising: {} for accesses issued in the "
                               "first half of the measured window, {} in the second (+{:.0f}%): "
                               "queues are still growing, so the fabric is not in a steady state "
                               "(the offered load may be more than it carries); a longer run "
                               "shows whether it settles",
                               pretty(s.half_mean(0)), pretty(s.half_mean(1)), 100 * (b - a) / a)
                 : fmt::format("the mean latency is still falling: {} for accesses issued in the "
                               "first half of the measured window, {} in the second ({:.0f}%): "
                               "the start (cold TLBs, empty queues filling) is still in the "
                               "window; set workload.traffic.warmup (or warmup_accesses) past it",
                               pretty(s.half_mean(0)), pretty(s.half_mean(1)), 100 * (b - a) / a)});
  }

  // The offered load (Poisson injection) against what the measured window carried.
  const std::uint32_t initiators = cfg.workload.initiators.empty()
                                       ? cfg.pod.gpus
                                       : static_cast<std::uint32_t>(cfg.workload.initiators.size());
  const Breakdown& bd = s.windowed() ? s.measured_breakdown() : s.remote_breakdown();
  std::size_t top = 0;
  double top_mean = -1, total = 0;
  for (std::size_t i = 0; i < bd.part_count(); ++i) {
    total += bd.part_mean(i);
    if (bd.part_mean(i) > top_mean) {
      top_mean = bd.part_mean(i);
      top = i;
    }
  }
  const std::string top_hop = bd.part_count() ? bd.part_name(top) : std::string();
  const std::string top_kind = top_hop.substr(top_hop.find('.') + 1);
  if (t.injection == Injection::Poisson && t.trace.empty() && t.local_fraction < 1.0 &&
      cfg.workload.kind == WorkloadKind::AllToAll && s.measured_accesses() > 0) {
    const PortConfig& port = cfg.fabric.port;
    const double port_bytes_per_s =
        static_cast<double>(port.lane_rate.bits_per_second()) * port.lanes / 8.0;
    const double eff = payload_efficiency(t.access_size.count(), port);
    // Local accesses (local_fraction) are offered too but never use the port.
    const double asked = t.offered_load * (1.0 - t.local_fraction);
    const double reached =
        s.measured_bandwidth() / initiators / eff / (port_bytes_per_s * cfg.fabric.planes);
    if (asked > 0 && reached < 0.9 * asked) {
      std::string where;
      const std::string hop = top_mean > 0 ? fmt::format("{} ({:.0f}% of the mean latency)",
                                                         top_hop, 100 * top_mean / total)
                                           : std::string("no hop in particular");
      if (rising)
        where =
            "the latency was still rising (above): the pod does not carry this load, and "
            "the time goes to " +
            hop;
      else if (short_window)
        where =
            "the window is too short (above): its start and drain weigh on the rate; the "
            "time goes to " +
            hop;
      else
        where = "the time goes to " + hop;
      out.push_back(
          {"offered_load_not_reached",
           fmt::format("the offered load was {:.2f} of each initiating GPU's port bandwidth{}, "
                       "but the measured window carried {:.2f} ({:.0f}% of it); {}",
                       asked,
                       t.local_fraction > 0
                           ? fmt::format(" (offered_load {:.2f} less its local share {:.2f})",
                                         t.offered_load, t.local_fraction)
                           : std::string(),
                       reached, 100 * reached / asked, where)});
    }
  }

  // One hop taking most of the latency.
  if (measured > 0 && total > 0 && top_mean / total > 0.5) {
    const auto keys = keys_governing(top_kind, t.injection == Injection::Poisson);
    std::vector<std::string> given;  // this run's own settings, and whether any govern the hop
    bool any_governs = false;
    for (const std::string& o : overrides) {
      const std::string k = o.substr(0, o.find('='));
      given.push_back(k);
      for (const std::string& g : keys)
        any_governs = any_governs || k.rfind(key_root(g), 0) == 0;
    }
    out.push_back(
        {"dominant_hop",
         fmt::format("{} takes {:.0f}% of the mean {}latency ({:.0f} of {:.0f} ns); "
                     "what governs it: {}{}",
                     top_hop, 100 * top_mean / total, s.windowed() ? "measured " : "", top_mean,
                     total, join(keys),
                     given.empty() || any_governs
                         ? std::string()
                         : fmt::format("; none of the settings given ({}) do", join(given)))});
  }

  served_warnings(s, out);
  return out;
}

}  // namespace podsim
