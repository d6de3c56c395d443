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

Pod::Pod(sc_core::sc_module_name name, const PodConfig& cfg, SocketTap* tap)
    : sc_module(name),
      cfg_(cfg),
      owned_(cfg.pod.gpus, true),
      net_(events_, "pod.host_net", cfg.pod.host_latency,
           [this](const HostNote& n) {
             if (n.kind == HostNote::Kind::Idle)
               note_idle(n);
             else
               scenario_->apply(n);
           }),
      pool_(static_cast<std::size_t>(cfg.pod.gpus) * (cfg.workload.traffic.outstanding + 8)),
      summary_(cfg.fabric.planes, cfg.sim.sample_interval) {
  host_.count(events_);
  fabric_ = std::make_unique<Fabric>("fabric", cfg.fabric, cfg.pod.gpus, events_, cfg.seed);
  std::vector<GpuNode*> nodes;
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
    auto id = static_cast<AccelId>(g);
    gpus_.push_back(std::make_unique<GpuNode>(fmt::format("gpu{}", g).c_str(), cfg.gpu, cfg.fabric,
                                              id, vpod_of(cfg, g), cfg.pod.addr_mode, cfg.seed,
                                              pool_, events_, &invariants_, tap));
    gpus_.back()->agent.set_series(&summary_.series());
    for (std::uint32_t p = 0; p < cfg.fabric.planes; ++p)
      fabric_->attach(gpus_.back()->port(p), id, p);
    nodes.push_back(gpus_.back().get());
  }
  scenario_ = std::make_unique<ScenarioRunner>(cfg_, nodes, net_, owned_, &replay_, &host_);
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

bool Pod::local_settled() const {
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    if (owned_[g] && !gpus_[g]->down() && !gpus_[g]->driver.quiescent()) return false;
  return true;
}

void Pod::note_idle(const HostNote& n) {
  IdleRound& r = idle_rounds_[n.index];
  ++r.answers;
  r.idle = r.idle && n.a != 0;
  if (r.answers == ranks_) notify_event(idle_decided_);
}

void Pod::control() {
  // The pod hears that every process is done (the host latency after the last one was).
  while (!scenario_->finished())
    sc_core::wait(scenario_->finished_event());
  if (cfg_.workload.teardown) {
    // Every process exits, as the kernel would close what it holds; then revokes run.
    std::size_t exiting = 0;
    for (auto [gpu, process] : scenario_->processes()) {
      GpuNode& node = *gpus_[gpu];
      if (!owned_[gpu] || node.down()) continue;
      ++exiting;
      node.driver.start(node.driver.driver().process_exit(static_cast<driver::ProcessId>(process)),
                        std::function<void()>([&] { --exiting; }));
    }
    // Rounds: every `interval` from now, each rank says whether its processes have exited
    // and its drivers are idle; the pod hears every answer the host latency later and stops
    // when all are, or when revokes (up to release_timeout for releases, each send polling up
    // to writeback_timeout) have had time for a chain of both.
    const driver::DriverConfig& d = cfg_.gpu.driver;
    const Time start = sim_now();
    const Time limit = start + (d.release_timeout + d.writeback_timeout) * 3 + Time::ms(1);
    const Time interval = std::max(Time::us(10), net_.latency() * 2);
    bool idle = false;
    for (std::uint32_t round = 0;; ++round) {
      const Time poll = start + interval * round;
      if (poll > sim_now()) sc_core::wait(to_sc(poll - sim_now()));
      HostNote n;
      n.kind = HostNote::Kind::Idle;
      n.index = round;
      n.a = exiting == 0 && local_settled() ? 1 : 0;
      net_.publish(std::move(n));
      while (idle_rounds_[round].answers < ranks_)
        sc_core::wait(idle_decided_);
      idle = idle_rounds_[round].idle;
      if (idle || poll >= limit) break;
    }
    if (!idle && owned_[0])
      invariants_.report(sim_now(), "the drivers were still busy long after teardown");
    check_holdings();
  }
  finished_ = true;
  sc_core::sc_stop();
}

void Pod::check_holdings() {
  for (const auto& g : gpus_) {
    if (!owned_[g->id()] || g->down()) continue;
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

void Pod::finalize() {
  fabric_->finalize();
  summary_.gather(gpus_, invariants_);
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
