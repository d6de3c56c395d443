#include "sim/pod/summary.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <map>
#include <ostream>

#include "fabric/framing.hpp"
#include "sim/pod/collective_run.hpp"
#include "sim/pod/model_run.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/run.hpp"
#include "sim/pod/warnings.hpp"

namespace podsim {

void print_summary(const Pod& pod, const HostTiming& host, const std::string& out_dir,
                   const std::vector<std::string>& files, const std::vector<RunWarning>& warnings,
                   std::ostream& out) {
  const PodConfig& cfg = pod.config();
  const Distribution& lat = pod.summary().remote_latency();
  const LogHistogram& h = lat.histogram();
  auto ns = [&](std::uint64_t v) { return lat.reported(static_cast<double>(v)); };
  const Time sim = sim_now();

  fmt::print(out, "podsim {} | {} | {} GPUs | {} plane{} of {} | seed {}\n", podsim_version(),
             cfg.name, cfg.pod.gpus, cfg.fabric.planes, cfg.fabric.planes == 1 ? "" : "s",
             enum_name(std::span<const EnumName<Topology>>(kTopologyNames), cfg.fabric.topology),
             cfg.seed);
  const double rate =
      host.seconds > 0 ? static_cast<double>(pod.summary().remote_accesses()) / host.seconds : 0;
  fmt::print(out,
             "simulated {} in {:.2f} s of host time ({:.0f} remote accesses per host second)\n",
             pretty(sim), host.seconds, rate);
  // The phases, simulated and host time: the setup until the first access, the access phases
  // (first access issued to last completed), and the teardown after them.
  const PodSummary& ps = pod.summary();
  if (ps.access_end() > Time{})
    fmt::print(out,
               "{:<18}setup {} ({:.2f} s host), accesses {} ({:.2f} s host), teardown {} ({:.2f} "
               "s host)\n",
               "phases", pretty(ps.access_start()), host.setup, pretty(ps.access_phase()),
               host.access, pretty(sim - ps.access_end()), host.teardown);
  fmt::print(out, "\n");

  // A collective: its table first, as nccl-tests prints it (time per call, algorithm and bus
  // bandwidth), with the outputs checked.
  if (const CollectiveRun* c = pod.scenario().collective()) {
    fmt::print(out, "{} {} over {} GPUs ({}; time: a call's first start to last end)\n",
               c->op_name(), c->algorithm_name(), c->participants(),
               c->reduces() ? "float32 sum" : "float32");
    fmt::print(out, "  {:>12} {:>6} {:>12} {:>11} {:>11} {:>8}\n", "bytes", "calls", "time (us)",
               "algbw GB/s", "busbw GB/s", "wrong");
    for (const CollectiveRun::Row& r : c->rows())
      fmt::print(out, "  {:>12} {:>6} {:>12.2f} {:>11.2f} {:>11.2f} {:>8}\n", r.bytes, r.calls,
                 r.time_us, r.algbw_gbps, r.busbw_gbps,
                 r.checked ? std::to_string(r.wrong) : "n/a");
    fmt::print(out, "\n");
  }

  if (const ModelRun* m = pod.scenario().model()) {
    fmt::print(out, "{:<18}{} nodes, {} communication groups; makespan {} (model.csv)\n\n",
               "model trace", m->trace().nodes.size(), m->groups(), pretty(m->makespan()));
  }

  fmt::print(out, "{:<18}{} ({} loads, {} stores); {} not served, {} retried\n", "remote accesses",
             pod.summary().remote_accesses(), pod.summary().remote_reads(),
             pod.summary().remote_writes(), pod.summary().faults(), pod.summary().retries());
  // What "not served" and "retried" were, in words.
  const PodSummary& s = pod.summary();
  if (s.gpuvm_faults())
    fmt::print(out,
               "  {:<16}{} found no valid mapping in their own GPUVM, never sent (an import's "
               "mapping invalidated by a revoke or a reset, or none made)\n",
               "not served", s.gpuvm_faults());
  if (s.remote_faults())
    fmt::print(out,
               "  {:<16}{} refused by their exporter: no valid NPA mapping (revoked, released, or "
               "the exporter reset since the import)\n",
               s.gpuvm_faults() ? "" : "not served", s.remote_faults());
  if (s.unreachable())
    fmt::print(out, "  {:<16}{} sent to a GPU that was down (reset)\n",
               s.gpuvm_faults() || s.remote_faults() ? "" : "not served", s.unreachable());
  if (s.retries())
    fmt::print(out,
               "  {:<16}{} answered \"retry\" (a revoke or page move under way: PTE.X) and "
               "issued again\n",
               "retried", s.retries());
  // With a warm-up, the latency, bandwidth and breakdown are the measured window's, the whole
  // run's beside them.
  const bool windowed = s.windowed();
  const Distribution& mlat = windowed ? s.measured_latency() : lat;
  const LogHistogram& mh = mlat.histogram();
  if (windowed) {
    const TrafficConfig& t = cfg.workload.traffic;
    std::string warm;
    if (t.warmup > Time{}) warm = "the first " + pretty(t.warmup);
    if (t.warmup_accesses)
      warm +=
          fmt::format("{}the first {} accesses", warm.empty() ? "" : " and ", t.warmup_accesses);
    fmt::print(out,
               "{:<18}{} from {}: {} remote accesses measured; {} issued in warm-ups ({} of each "
               "GPU's access phase) not measured\n",
               "measured window", pretty(s.window().length()), pretty(s.window().start),
               s.measured_accesses(), s.warmup_accesses(), warm);
  }
  if (mh.count() > 0) {
    fmt::print(out, "{:<18}mean {:.1f}  p50 {:.1f}  p99 {:.1f}  min {:.1f}  max {:.1f}{}\n",
               "latency (ns)", mlat.reported(mh.mean()), ns(mh.percentile(0.5)),
               ns(mh.percentile(0.99)), ns(mh.min()), ns(mh.max()),
               windowed && h.count() ? fmt::format("  (whole run: mean {:.1f}, p99 {:.1f})",
                                                   lat.reported(h.mean()), ns(h.percentile(0.99)))
                                     : std::string());
    if (windowed)
      fmt::print(out,
                 "{:<18}{:.2f} GB/s of remote payload over the measured window (whole run: {:.2f} "
                 "GB/s over a {} access phase)\n",
                 "bandwidth", s.measured_bandwidth() / 1e9, s.achieved_bandwidth() / 1e9,
                 pretty(s.access_phase()));
    else
      fmt::print(out, "{:<18}{:.2f} GB/s of remote payload over a {} access phase\n", "bandwidth",
                 s.achieved_bandwidth() / 1e9, pretty(s.access_phase()));
    const Breakdown& b = windowed ? s.measured_breakdown() : s.remote_breakdown();
    fmt::print(out, "per-hop breakdown (mean ns per {}remote access)\n",
               windowed ? "measured " : "");
    double total = 0;
    std::string last_dir;
    for (std::size_t i = 0; i < b.part_count(); ++i) {
      if (b.part_sum(i) <= 0) continue;
      const std::string& name = b.part_name(i);
      const auto dot = name.find('.');
      std::string dir = name.substr(0, dot) == "req" ? "request" : "response";
      fmt::print(out, "  {:<10}{:<10}{:>10.1f}\n", dir == last_dir ? "" : dir, name.substr(dot + 1),
                 b.part_mean(i));
      last_dir = dir;
      total += b.part_mean(i);
    }
    fmt::print(out, "  {:<20}{:>10.1f}\n", "total", total);
  }
  const PortConfig& port = cfg.fabric.port;
  const std::uint64_t data = cfg.workload.kind == WorkloadKind::Collective
                                 ? cfg.workload.collective.access_size.count()
                                 : cfg.workload.traffic.access_size.count();
  fmt::print(out,
             "{:<18}{} plane(s) of {}, {} x {}; payload efficiency {:.1f}% (a {} B data packet: "
             "{:.1f}%), plane balance {:.2f}\n",
             "fabric", cfg.fabric.planes,
             enum_name(std::span<const EnumName<Topology>>(kTopologyNames), cfg.fabric.topology),
             port.lanes,
             fmt::format("{:g} Gb/s", static_cast<double>(port.lane_rate.bits_per_second()) / 1e9),
             100.0 * pod.summary().payload_efficiency(), data,
             100.0 * payload_efficiency(data, port), pod.summary().plane_balance());
  auto line = [&](const char* what, const Distribution& d) {
    const LogHistogram& hh = d.histogram();
    if (hh.count() == 0) return;
    fmt::print(out, "  {:<16}{:>6}  mean {:>10}  p99 {:>10}\n", what, hh.count(),
               pretty(Time::ps(static_cast<std::int64_t>(hh.mean()))),
               pretty(Time::ps(static_cast<std::int64_t>(hh.percentile(0.99)))));
  };
  fmt::print(out, "control path\n");
  line("export", pod.summary().export_time());
  line("import (first)", pod.summary().import_time());
  line("import (again)", pod.summary().import_repeat_time());
  line("revoke", pod.summary().revoke_time());
  line("message send", pod.summary().send_time());
  std::string msgs;
  for (std::size_t t = 1; t < driver::kMsgTypes; ++t) {
    const auto type = static_cast<driver::MsgType>(t);
    if (pod.summary().messages(type) == 0) continue;
    msgs += fmt::format("{}{} {}", msgs.empty() ? "" : ", ", driver::msg_name(type),
                        pod.summary().messages(type));
  }
  if (!msgs.empty()) fmt::print(out, "  messages        {}\n", msgs);
  fmt::print(out, "{:<18}{}\n", "invariants",
             pod.invariants().ok() ? "held"
                                   : fmt::format("{} violation(s), see stderr",
                                                 pod.invariants().violations().size()));
  if (!pod.stale_imports().empty()) {
    fmt::print(out,
               "{:<18}{} held at teardown, which their exporters no longer grant (forgotten "
               "without telling the importer: a reset, a deactivation or a connection reset; "
               "the driver drops one only when the two connect again)\n",
               "stale imports", pod.stale_imports().size());
    for (const auto& i : pod.stale_imports())
      fmt::print(out, "  gpu{} holds gpu{}'s export {:016x}\n", i.importer, i.exporter,
                 i.handle_lo);
  }
  // The scenario's steps: how many, what failed, and the resets (which explain much of the
  // above when there are any).
  const auto& steps = pod.step_records();
  if (!steps.empty()) {
    std::map<std::string, std::size_t> failed;
    std::string resets;
    std::size_t reset_count = 0, under_way = 0;
    for (const StepRecord& r : steps) {
      if (r.unfinished())
        ++under_way;
      else if (r.result != "OK")
        ++failed[r.result];
      if (r.op == "reset_node" && ++reset_count <= 8)
        resets +=
            fmt::format("{}gpu{} at {}", resets.empty() ? "" : ", ", r.gpu, pretty(r.started));
    }
    std::size_t bad = 0;
    std::string why;
    for (const auto& [name, n] : failed) {
      bad += n;
      why += fmt::format("{}{} {}", why.empty() ? "" : ", ", name, n);
    }
    fmt::print(out, "{:<18}{} step(s), {}{}\n", "steps", steps.size(),
               bad ? fmt::format("{} ended with an error ({})", bad, why)
                   : std::string(under_way ? "none ended with an error" : "every one OK"),
               under_way
                   ? fmt::format(", {} under way or waiting to begin when the run ended", under_way)
                   : "");
    if (reset_count)
      fmt::print(out, "  {:<16}{}{}\n", "node resets", resets,
                 reset_count > 8 ? fmt::format(" and {} more", reset_count - 8) : "");
  }
  if (!warnings.empty()) {
    fmt::print(out, "warnings          {} (run.json \"warnings\")\n", warnings.size());
    for (const RunWarning& w : warnings)
      fmt::print(out, "  - {}: {}\n", w.code, w.text);
  }
  std::string names;
  for (const std::string& f : files)
    names += (names.empty() ? "" : ", ") + f;
  fmt::print(out, "{:<18}{}: {}\n", "outputs", out_dir, names);
}

}  // namespace podsim
