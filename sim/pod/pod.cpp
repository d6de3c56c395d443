#include "sim/pod/pod.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "fabric/traffic.hpp"

namespace podsim {

namespace {
driver::VpodInfo vpod_of(const PodConfig& cfg, std::uint32_t gpu) {
  const std::uint32_t size = cfg.pod.vpod_size ? cfg.pod.vpod_size : cfg.pod.gpus;
  driver::VpodInfo v;
  v.id = gpu / size;
  v.members.assign(kMaxAccels, false);
  for (std::uint32_t g = v.id * size; g < (v.id + 1) * size && g < cfg.pod.gpus; ++g)
    v.members[g] = true;
  return v;
}
}  // namespace

Pod::Pod(sc_core::sc_module_name name, const PodConfig& cfg)
    : sc_module(name),
      cfg_(cfg),
      pool_(static_cast<std::size_t>(cfg.pod.gpus) * (cfg.workload.traffic.outstanding + 8)),
      breakdown_(stats_, "remote_breakdown", "ns",
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
      series_({"remote", "local"}, cfg.sim.sample_interval) {
  stats_.add_child(paths_);
  for (std::uint32_t p = 0; p < cfg.fabric.planes; ++p)
    plane_bytes_.push_back(std::make_unique<Counter>(
        stats_, fmt::format("plane{}.wire_bytes", p), "bytes",
        "wire bytes of data traffic (requests and responses) the GPUs sent on this plane"));
  for (std::size_t t = 1; t < driver::kMsgTypes; ++t) {
    const std::string n(driver::msg_name(static_cast<driver::MsgType>(t)));
    messages_.push_back(std::make_unique<Counter>(stats_, "messages." + n, "count",
                                                  "protocol messages of this type sent, all GPUs"));
  }
  host_.count(events_);
  fabric_ = std::make_unique<Fabric>("fabric", cfg.fabric, cfg.pod.gpus, events_, cfg.seed);
  std::vector<GpuNode*> nodes;
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
    auto id = static_cast<AccelId>(g);
    gpus_.push_back(std::make_unique<GpuNode>(fmt::format("gpu{}", g).c_str(), cfg.gpu, cfg.fabric,
                                              id, vpod_of(cfg, g), cfg.pod.addr_mode, cfg.seed,
                                              pool_, events_, &invariants_));
    gpus_.back()->agent.set_series(&series_);
    for (std::uint32_t p = 0; p < cfg.fabric.planes; ++p)
      fabric_->attach(gpus_.back()->port(p), id, p);
    nodes.push_back(gpus_.back().get());
  }
  scenario_ = std::make_unique<ScenarioRunner>(cfg_, nodes, &replay_, &host_);
  spawn_thread("control", [this] { control(); });
}

Pod::~Pod() = default;

std::vector<std::string> Pod::failures() const {
  std::vector<std::string> out = scenario_->failures();
  out.insert(out.end(), own_failures_.begin(), own_failures_.end());
  return out;
}

bool Pod::settled() const {
  for (const auto& g : gpus_)
    if (!g->down() && !g->driver.quiescent()) return false;
  return true;
}

void Pod::control() {
  while (!scenario_->finished())
    sc_core::wait(scenario_->finished_event());
  if (cfg_.workload.teardown) {
    // Every process exits, as the kernel would close what it holds; then revokes run.
    std::size_t exiting = 0;
    sc_core::sc_event exited;
    for (auto [gpu, process] : scenario_->processes()) {
      GpuNode& node = *gpus_[gpu];
      if (node.down()) continue;
      ++exiting;
      node.driver.start(node.driver.driver().process_exit(static_cast<driver::ProcessId>(process)),
                        std::function<void()>([&] {
                          if (--exiting == 0) notify_event(exited);
                        }));
    }
    while (exiting > 0)
      sc_core::wait(exited);
    // Revokes wait up to release_timeout for releases and each send may poll for up to
    // writeback_timeout: allow for a chain of both, then check.
    const driver::DriverConfig& d = cfg_.gpu.driver;
    const Time limit = sim_now() + (d.release_timeout + d.writeback_timeout) * 3 + Time::ms(1);
    while (!settled() && sim_now() < limit)
      sc_core::wait(to_sc(Time::us(10)));
    if (!settled())
      invariants_.report(sim_now(), "the drivers were still busy long after teardown");
    check_holdings();
  }
  finished_ = true;
  sc_core::sc_stop();
}

void Pod::check_holdings() {
  for (const auto& g : gpus_) {
    if (g->down()) continue;
    const driver::Holdings h = g->driver.driver().holdings();
    std::vector<std::string> held;
    auto add = [&](std::uint64_t n, const char* what) {
      if (n) held.push_back(fmt::format("{} {}", n, what));
    };
    add(h.buffers, "buffer(s)");
    add(h.pins, "pin(s)");
    add(h.npa_ranges, "NPA range(s)");
    add(h.exports, "export(s)");
    add(h.revoking, "revoke(s) in progress");
    add(h.imports, "import(s)");
    add(h.handles, "GEM handle(s)");
    add(h.fds, "fd(s)");
    add(h.waiters, "waiter(s)");
    add(h.busy_tasks, "unfinished call(s)");
    if (held.empty()) continue;
    std::string what = fmt::format("gpu{} still holds after teardown:", g->id());
    for (std::size_t i = 0; i < held.size(); ++i)
      what += (i ? ", " : " ") + held[i];
    for (const auto& line : h.details)
      what += "\n    " + line;
    invariants_.report(sim_now(), what);
  }
}

void Pod::replay(const std::vector<TraceEntry>& trace) {
  replay_.assign(cfg_.pod.gpus, {});
  for (const TraceEntry& e : trace)
    replay_.at(e.gpu).push_back(e);
}

void Pod::set_timeline(Timeline* t) {
  for (auto& g : gpus_) {
    g->agent.set_timeline(t);
    g->driver.set_timeline(t);
  }
}

void Pod::record_accesses() {
  access_log_.assign(gpus_.size(), {});
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    gpus_[g]->agent.record_to(&access_log_[g]);
}

std::vector<TraceEntry> Pod::access_log() const {
  std::vector<TraceEntry> all;
  for (const auto& g : access_log_)
    all.insert(all.end(), g.begin(), g.end());
  return all;
}

void Pod::run(const std::function<void()>& between, Time slice) {
  // The end of a run gathers per-module samples into the pod's (finalize): once.
  if (ran_) throw std::logic_error("Pod::run: a pod runs once");
  ran_ = true;
  if (!between) {
    events_.run_for(cfg_.sim.max_time);
  } else {
    while (sc_core::sc_get_status() != sc_core::SC_STOPPED && sim_now() < cfg_.sim.max_time) {
      events_.run_for(std::min(slice, cfg_.sim.max_time - sim_now()));
      between();
    }
  }
  finalize();
  host_.finish();
}

std::uint64_t Pod::accesses_completed() const {
  std::uint64_t n = 0;
  for (const auto& g : gpus_)
    n += g->agent.completed();
  return n;
}

double Pod::achieved_bandwidth() const {
  const double t = access_phase().as_seconds();
  return t > 0 ? static_cast<double>(bytes_.value()) / t : 0.0;
}

double Pod::plane_balance() const {
  std::uint64_t lo = UINT64_MAX, hi = 0;
  for (const auto& c : plane_bytes_) {
    lo = std::min(lo, c->value());
    hi = std::max(hi, c->value());
  }
  return hi ? static_cast<double>(lo) / static_cast<double>(hi) : 1.0;
}

double Pod::payload_efficiency() const {
  double payload = 0, wire = 0;
  for (const auto& g : gpus_)
    for (const auto& p : g->ports) {
      for (const Stat* s : p->egress().stats().stats()) {
        if (s->name() == "payload_bytes") payload += s->as<Counter>()->value();
        if (s->name() == "wire_bytes") wire += s->as<Counter>()->value();
      }
    }
  return wire > 0 ? payload / wire : 0.0;
}

std::uint64_t Pod::messages(driver::MsgType t) const {
  return messages_[static_cast<std::size_t>(t) - 1]->value();
}

void Pod::finalize() {
  fabric_->finalize();
  phase_start_ = Time::max();
  for (auto& g : gpus_) {
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
  for (auto& g : gpus_)
    for (std::uint32_t p = 0; p < g->ports.size(); ++p)
      plane_bytes_[p]->inc(g->ports[p]->egress().wire_bytes_sent(TrafficClass::Request) +
                           g->ports[p]->egress().wire_bytes_sent(TrafficClass::Response));
  accesses_.inc(latency_.histogram().count());
  violations_.inc(invariants_.violations().size());
}

std::vector<std::pair<std::string, const Distribution*>> Pod::latency_paths() const {
  std::vector<std::pair<std::string, const Distribution*>> out = {{"local", &path_local_},
                                                                  {"remote", &path_remote_}};
  for (std::size_t n = 0; n < path_switches_.size(); ++n)
    if (path_switches_[n])
      out.emplace_back("remote_" + ComputeAgent::switches_name(n), path_switches_[n].get());
  return out;
}

std::map<std::string, std::uint64_t> Pod::cache_digests() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& g : gpus_) {
    Digest vm, npa;
    g->gpuvm.digest_caches(vm);
    g->npa_mmu.digest_caches(npa);
    out[fmt::format("gpu{}.gpuvm.caches", g->id())] = vm.value();
    out[fmt::format("gpu{}.npa_mmu.caches", g->id())] = npa.value();
  }
  return out;
}

void Pod::record_setup_digests(std::function<void(const SetupDigests&)> done) {
  auto digests = std::make_shared<SetupDigests>();
  scenario_->on_first_access([this, digests] {
    digests->caches_at = sim_now();
    digests->caches = cache_digests();
    notify_event(access_started_);
  });
  spawn_thread("setup_digests", [this, digests, done] {
    sc_core::wait(access_started_);
    while (!settled())
      sc_core::wait(to_sc(Time::us(1)));
    digests->state_at = sim_now();
    digests->state = state_digests();
    done(*digests);
  });
}

std::map<std::string, std::uint64_t> Pod::state_digests() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& g : gpus_) {
    const std::string gpu = fmt::format("gpu{}.", g->id());
    auto take = [&](const char* part, auto&& fill) {
      Digest d;
      fill(d);
      out[gpu + part] = d.value();
    };
    take("driver", [&](Digest& d) { g->driver.driver().digest(d); });
    take("gpuvm", [&](Digest& d) { g->gpuvm.digest(d); });
    take("npa_mmu", [&](Digest& d) { g->npa_mmu.digest(d); });
    take("vram", [&](Digest& d) { g->vram.digest(d); });
    take("mailbox", [&](Digest& d) { g->mailbox.digest(d); });
  }
  return out;
}

}  // namespace podsim
