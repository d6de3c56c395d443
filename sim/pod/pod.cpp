#include "sim/pod/pod.hpp"

#include <fmt/format.h>

namespace podsim {

Pod::Pod(sc_core::sc_module_name name, const PodConfig& cfg)
    : sc_module(name),
      cfg_(cfg),
      pool_(static_cast<std::size_t>(cfg.pod.gpus) * (cfg.workload.traffic.outstanding + 8)),
      is_initiator_(cfg.pod.gpus, cfg.workload.initiators.empty()),
      directory_(cfg.pod.gpus),
      breakdown_(stats_, "remote_breakdown", "ns",
                 "mean time of a remote access in each hop, all GPUs (parts add up to the mean "
                 "remote latency)",
                 ComputeAgent::breakdown_parts(), kPsPerNs),
      bandwidth_(stats_, "achieved_bandwidth", "GB/s",
                 "remote payload bytes per second of the access phase, all GPUs",
                 [this] { return achieved_bandwidth() / 1e9; }),
      phase_time_(stats_, "access_phase_time", "ns",
                  "from the first access issued to the last completed",
                  [this] { return access_phase().as_ns(); }) {
  const std::uint64_t two_mib = 2ull << 20;
  va_stride_ = (cfg.workload.buffer_size.count() + two_mib - 1) / two_mib * two_mib;
  for (std::uint32_t g : cfg.workload.initiators)
    is_initiator_[g] = true;
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g)
    if (is_initiator_[g]) initiators_.push_back(static_cast<AccelId>(g));

  fabric_ = make_fabric(cfg.fabric, cfg.pod.gpus);
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
    auto id = static_cast<AccelId>(g);
    gpus_.push_back(std::make_unique<GpuNode>(fmt::format("gpu{}", g).c_str(), cfg.gpu,
                                              cfg.fabric.port, id, cfg.pod.addr_mode, cfg.seed,
                                              pool_));
    fabric_->attach(gpus_.back()->port, id);
  }
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
    auto id = static_cast<AccelId>(g);
    spawn_thread(fmt::format("workload{}", g).c_str(), [this, id] { workload(id); });
  }
}

Pod::~Pod() = default;

std::uint64_t Pod::import_va(AccelId exporter) const {
  return kRemoteVa + static_cast<std::uint64_t>(exporter) * va_stride_;
}

void Pod::fail(AccelId gpu, const std::string& what) {
  failures_.push_back(fmt::format("gpu{} at {}: {}", gpu, to_string(sim_now()), what));
  sc_core::sc_stop();
}

// One GPU's process: export a buffer, exchange handles, import and map every peer's buffer,
// then (if it initiates) run the access phase.
void Pod::workload(AccelId self) {
  using namespace driver;
  GpuNode& node = *gpus_[self];
  DriverShell& drv = node.driver;
  const std::uint32_t n = cfg_.pod.gpus;

  auto gem =
      drv.call([&](Driver& d) { return d.gem_create(cfg_.workload.buffer_size, Domain::Vram); });
  if (!gem.ok()) return fail(self, fmt::format("gem_create: {}", errno_name(gem.err)));
  auto local = drv.call([&](Driver& d) { return d.gem_va_map(gem.value, kLocalVa, 0); });
  if (local != Errno::Ok) return fail(self, fmt::format("gem_va_map: {}", errno_name(local)));
  auto h = drv.call([&](Driver& d) { return d.export_handle(gem.value); });
  if (!h.ok()) return fail(self, fmt::format("export: {}", errno_name(h.err)));

  directory_[self] = h.value;
  if (++published_ == n) published_ev_.notify(sc_core::SC_ZERO_TIME);
  while (published_ < n)
    sc_core::wait(published_ev_);

  // Import every peer's buffer, all requests in flight at once.
  std::vector<Result<Fd>> fds(n, Result<Fd>{Errno::Fault, -1});
  std::uint32_t pending = 0;
  sc_core::sc_event imported;
  for (std::uint32_t k = 1; k < n; ++k) {
    const auto peer = static_cast<AccelId>((self + k) % n);
    ++pending;
    drv.import_async(directory_[peer], [&, peer](Result<Fd> r) {
      fds[peer] = r;
      if (--pending == 0) imported.notify(sc_core::SC_ZERO_TIME);
    });
  }
  while (pending > 0)
    sc_core::wait(imported);

  std::vector<AccessRegion> regions;
  for (std::uint32_t k = 1; k < n; ++k) {
    const auto peer = static_cast<AccelId>((self + k) % n);
    if (!fds[peer].ok())
      return fail(self, fmt::format("import from gpu{}: {}", peer, errno_name(fds[peer].err)));
    auto g = drv.call([&](Driver& d) { return d.gem_from_fd(fds[peer].value); });
    if (!g.ok()) return fail(self, fmt::format("gem_from_fd: {}", errno_name(g.err)));
    drv.call([&](Driver& d) { return d.close_fd(fds[peer].value); });
    auto m = drv.call([&](Driver& d) { return d.gem_va_map(g.value, import_va(peer), 0); });
    if (m != Errno::Ok) return fail(self, fmt::format("gem_va_map: {}", errno_name(m)));
    regions.push_back({import_va(peer), cfg_.workload.buffer_size.count()});
  }

  // Everyone has mapped: the access phase starts together.
  if (++mapped_ == n) mapped_ev_.notify(sc_core::SC_ZERO_TIME);
  while (mapped_ < n)
    sc_core::wait(mapped_ev_);
  if (!is_initiator_[self]) return;

  node.agent.start(cfg_.workload.traffic, std::move(regions));
  while (!node.agent.finished())
    sc_core::wait(node.agent.done());
  if (++finished_gpus_ == initiators_.size()) sc_core::sc_stop();
}

void Pod::run() {
  sc_core::sc_start(to_sc(cfg_.sim.max_time));
  finalize();
}

double Pod::achieved_bandwidth() const {
  const double t = access_phase().as_seconds();
  return t > 0 ? static_cast<double>(bytes_.value()) / t : 0.0;
}

void Pod::finalize() {
  if (finalized_) return;
  finalized_ = true;
  phase_start_ = Time::max();
  for (auto& g : gpus_) {
    const ComputeAgent& a = g->agent;
    import_time_.merge(g->driver.driver().import_time());
    export_time_.merge(g->driver.driver().export_time());
    if (a.issued() == 0) continue;
    latency_.merge(a.remote_latency());
    breakdown_.merge(a.remote_breakdown());
    bytes_.inc(a.remote_bytes());
    reads_.inc(a.remote_reads());
    writes_.inc(a.remote_writes());
    faults_.inc(a.faults());
    phase_start_ = std::min(phase_start_, a.first_issue());
    phase_end_ = std::max(phase_end_, a.last_complete());
  }
  if (phase_start_ == Time::max()) phase_start_ = phase_end_ = Time{};
  accesses_.inc(latency_.histogram().count());
}

}  // namespace podsim
