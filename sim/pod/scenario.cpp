#include "sim/pod/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <utility>

#include "fabric/framing.hpp"
#include "fabric/topology.hpp"
#include "sim/pod/collective_run.hpp"
#include "sim/pod/model_run.hpp"

namespace podsim {

using driver::Errno;

namespace {
// Visits with one overloaded call operator per alternative.
template <class... F>
struct Overload : F... {
  using F::operator()...;
};
template <class... F>
Overload(F...) -> Overload<F...>;

}  // namespace

std::vector<Step> ScenarioRunner::all_to_all_steps(const PodConfig& cfg) {
  const std::uint32_t n = cfg.pod.gpus;
  const auto& w = cfg.workload;
  std::vector<bool> initiator(n, w.initiators.empty());
  for (std::uint32_t g : w.initiators)
    initiator[g] = true;
  std::vector<Step> steps;
  auto step = [&](std::uint32_t gpu, StepKind kind) -> Step& {
    steps.push_back(make_step(gpu, std::move(kind)));
    return steps.back();
  };
  // The peers a GPU imports from: every other GPU of its vPod, or `peers` of them spread
  // evenly around it; the ones it accesses: those, or only the targets among them.
  const std::uint32_t vpod = cfg.pod.vpod_size ? cfg.pod.vpod_size : n;
  const std::uint32_t want = w.peers && w.peers < vpod - 1 ? w.peers : vpod - 1;
  auto peers_of = [&](std::uint32_t g) {
    std::vector<std::uint32_t> peers;
    for (std::uint32_t j = 0; j < want; ++j) {
      const std::uint32_t k =
          1 + static_cast<std::uint32_t>(static_cast<std::uint64_t>(j) * (vpod - 1) / want);
      peers.push_back(g / vpod * vpod + (g % vpod + k) % vpod);
    }
    return peers;
  };
  std::vector<std::vector<std::uint32_t>> importers(n);  // by exporter, in importer order
  for (std::uint32_t q = 0; q < n; ++q)
    for (std::uint32_t g : peers_of(q))
      importers[g].push_back(q);
  auto importers_of = [&](std::uint32_t g) -> const std::vector<std::uint32_t>& {
    return importers[g];
  };
  std::vector<bool> target(n, w.targets.empty());
  for (std::uint32_t g : w.targets)
    target[g] = true;
  for (std::uint32_t g = 0; g < n; ++g) {
    step(g, AllocStep{w.buffer_size, "buf", AllocDomain::Vram});
    step(g, MapStep{MapStep::From::Buffer, "buf", "local"});
    step(g, ExportStep{"buf", fmt::format("h{}", g)});
    for (std::uint32_t q : importers_of(g)) {
      const std::string h = fmt::format("h{}", g);
      step(g, SendHandleStep{h, q, h});
    }
    for (std::uint32_t q : peers_of(g)) {
      Step& imp = step(g, ImportStep{fmt::format("h{}", q), fmt::format("fd{}", q)});
      imp.common.retries = 1000;  // a concurrent handshake with the same peer answers EAGAIN
      imp.common.retry_interval = Time::us(10);
      step(g, MapStep{MapStep::From::Fd, fmt::format("fd{}", q), fmt::format("m{}", q)});
      step(g, CloseFdStep{fmt::format("fd{}", q)});
    }
    step(g, BarrierStep{"mapped"});
    std::vector<std::string> accessed;
    for (std::uint32_t q : peers_of(g))
      if (target[q]) accessed.push_back(fmt::format("m{}", q));
    if (w.traffic.local_fraction > 0) accessed.push_back("local");  // its own buffer too
    if (initiator[g] && !accessed.empty()) {
      AccessStep acc;
      acc.mappings = accessed;
      step(g, std::move(acc));
    }
  }
  return steps;
}

ScenarioRunner::ScenarioRunner(const PodConfig& cfg, std::vector<GpuNode*> gpus, Fabric& fabric,
                               HostNet& net, std::vector<bool> owned,
                               const std::vector<std::vector<TraceEntry>>* replay, HostPhases* host)
    : cfg_(cfg),
      gpus_(std::move(gpus)),
      fabric_(fabric),
      net_(net),
      owned_(std::move(owned)),
      replay_(replay),
      host_(host),
      handles_(cfg.pod.gpus),
      lost_handles_(cfg.pod.gpus) {
  if (owned_.empty()) owned_.assign(cfg.pod.gpus, true);
  // The config's steps passed StepConfig::check when read: typed here, once.
  if (cfg.workload.kind == WorkloadKind::Collective) {
    collective_ = std::make_unique<CollectiveRun>(cfg);
    steps_ = collective_->steps();
  } else if (cfg.workload.kind == WorkloadKind::Model) {
    // The trace was read and checked before the pod was built (run.cpp): read again here.
    model_ =
        std::make_unique<ModelRun>(cfg, load_model_trace(cfg.workload.model, cfg.pod.gpus,
                                                         cfg.workload.collective.chunk_size.count(),
                                                         cfg.workload.model_groups));
    steps_ = model_->steps();
  } else {
    steps_ = cfg.workload.kind == WorkloadKind::Scenario ? to_steps(cfg.workload.steps)
                                                         : all_to_all_steps(cfg);
  }
  if (cfg.workload.setup == SetupMode::Direct) {
    steps_ = direct_setup(steps_);
    setup_failures_ = failures_.size();
    if (!failures_.empty()) return;  // nothing runs: the pod stops at once and reports it
  }
  // The pod stops when a failure reaches it: a SystemC process at that time, so that the
  // event queue serves everything due then, and nothing later, on any number of ranks.
  if (cfg.workload.on_failure == OnFailure::Stop)
    spawn_thread("stop_on_failure", [this] {
      sc_core::wait(failed_ev_);
      sc_core::sc_stop();
    });
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    // The pod's own steps (resets, faults, signals) of one GPU run in order, apart from other
    // GPUs'.
    const Key key = pod_level(s.op()) ? Key{s.common.gpu, 0} : Key{s.common.gpu, s.common.process};
    groups_[key].push_back(i);
    if (const auto* b = std::get_if<BarrierStep>(&s.kind)) ++barriers_[b->name].expected;
    if (const auto* f = std::get_if<SendFdStep>(&s.kind))
      fds_sent_[{s.common.gpu, f->to_process}].insert(f->as);
  }
  // The pod's own steps take no time: each runs at the time it names (one without `at` at the
  // time of the one before it in the list), whatever the list order.
  for (auto& [key, idx] : groups_) {
    if (key.second != 0) continue;
    std::vector<std::pair<Time, std::size_t>> timed;
    Time t;
    for (std::size_t i : idx) {
      if (steps_[i].common.at) t = *steps_[i].common.at;
      timed.emplace_back(t, i);
    }
    std::stable_sort(timed.begin(), timed.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t k = 0; k < idx.size(); ++k)
      idx[k] = timed[k].second;
  }
  // The pod's bring-up (protocol setup): every GPU starts as a freshly loaded driver on a
  // device not yet activated, commits its pPod and vPod and activates; the workload starts
  // when all are READY (a barrier of their own), and its steps' `at` count from then.
  const bool bring_up = cfg.workload.setup == SetupMode::Protocol;
  if (bring_up) barriers_[kBringUp].expected = cfg.pod.gpus;
  for (auto& [name, b] : barriers_) {
    b.index = static_cast<std::uint32_t>(barrier_by_index_.size());
    barrier_by_index_.push_back(&b);
  }
  if (bring_up) {
    for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
      if (!owned_[g]) continue;
      gpus_[g]->unconfigure();
      spawn_thread(fmt::format("gpu{}_bring_up", g).c_str(), [this, g] { run_bring_up(g); });
    }
  } else {
    started_ = true;
  }
  // Each GPU's processes run where the GPU is; the pod's own steps (node resets, faults) on
  // every rank, each acting only on the GPU it names where that GPU is held.
  for (auto& [key, idx] : groups_) {
    const Key k = key;
    if (k.second != 0 && !owned_[k.first]) continue;
    const std::vector<std::size_t> steps = idx;
    spawn_thread(fmt::format("gpu{}_process{}", k.first, k.second).c_str(),
                 [this, k, steps] { run_group(k, steps); });
  }
}

ScenarioRunner::~ScenarioRunner() = default;

std::vector<std::pair<std::uint32_t, std::uint32_t>> ScenarioRunner::processes() const {
  std::set<std::pair<std::uint32_t, std::uint32_t>> all;
  for (const auto& [key, steps] : groups_)
    if (key.second != 0) all.insert(key);
  for (const auto& [key, state] : states_)  // direct setup's processes, even if they ran nothing
    if (key.second != 0) all.insert(key);
  return {all.begin(), all.end()};
}

// The pod stops once the failure has reached it (the host latency later, on every rank).
void ScenarioRunner::fail(std::size_t step, const std::string& what) {
  failures_.push_back(what);
  failed_at_.emplace_back(sim_now(), step);
  HostNote n;
  n.kind = HostNote::Kind::Failure;
  n.text = what;
  net_.publish(std::move(n));
}

void ScenarioRunner::apply(const HostNote& n) {
  switch (n.kind) {
    case HostNote::Kind::Barrier: {
      Barrier& bar = *barrier_by_index_.at(n.index);
      if (++bar.arrived == bar.expected) notify_event(bar.ev);
      break;
    }
    case HostNote::Kind::Handle:
      handles_.at(n.index)[n.text] = driver::UalinkHandle{n.a, n.b};
      notify_event(handle_ev_);
      break;
    case HostNote::Kind::GroupDone:
      if (++finished_groups_ == groups_.size()) notify_event(finished_ev_);
      break;
    case HostNote::Kind::Failure: notify_event(failed_ev_); break;
    case HostNote::Kind::HandleLost:
      lost_handles_.at(n.index).insert(n.text);
      notify_event(handle_ev_);
      break;
    case HostNote::Kind::Idle:
      throw std::logic_error("ScenarioRunner::apply: an Idle note is the pod's");
  }
}

void ScenarioRunner::run_bring_up(std::uint32_t g) {
  driver::DriverShell& drv = gpus_[g]->driver;
  driver::Driver& d = drv.driver();
  const auto self = static_cast<AccelId>(g);
  const char* what = "ppod_commit";
  Errno e = drv.call(d.ppod_commit(driver::PpodInfo{self, cfg_.pod.gpus}));
  if (e == Errno::Ok) {
    what = "vpod_commit";
    e = drv.call(d.vpod_commit(d.vpod()));
  }
  if (e == Errno::Ok) {
    what = "activate";
    e = drv.call(d.activate());
  }
  if (e != Errno::Ok) {
    fail(SIZE_MAX, fmt::format("bring-up of gpu{} at {}: {} returned {}", g, pretty(sim_now()),
                               what, driver::errno_name(e)));
    return;
  }
  arrive(barriers_.at(kBringUp), g);
}

void ScenarioRunner::arrive(const Barrier& bar, std::uint32_t gpu) {
  // The arrival reaches every process over the hosts' network: the barrier releases the
  // host latency after its last arrival.
  HostNote n;
  n.kind = HostNote::Kind::Barrier;
  n.origin = gpu;
  n.index = bar.index;
  net_.publish(std::move(n));
}

void ScenarioRunner::wait_for_start() {
  if (started_) return;
  Barrier& bar = barriers_.at(kBringUp);
  while (bar.arrived < bar.expected)
    sc_core::wait(bar.ev);
  if (!started_) {
    started_ = true;
    start_ = sim_now();
  }
}

void ScenarioRunner::run_group(Key key, std::vector<std::size_t> steps) {
  wait_for_start();
  ProcessState& ps = states_[key];
  // The pod's own steps run on every rank alike; what they report, and the end of the group,
  // the rank holding the GPU they act on reports.
  const bool pod_group = key.second == 0;
  for (std::size_t i : steps) {
    const Step& step = steps_[i];
    const StepCommon& s = step.common;
    const bool reports = !pod_group || owned_[s.gpu];
    if (reports) {  // its process's next step, not begun yet (its `at` not come)
      StepRecord next;
      next.index = i;
      next.gpu = s.gpu;
      next.process = pod_group ? 0 : s.process;
      next.op = std::string(op_name(step.op()));
      next.started = sim_now();
      next.result = "NOT_STARTED";
      running_[i] = next;
    }
    if (s.at && start_ + *s.at > sim_now()) sc_core::wait(to_sc(start_ + *s.at - sim_now()));
    StepRecord rec;
    rec.index = i;
    rec.gpu = s.gpu;
    rec.process = pod_group ? 0 : s.process;  // the pod's own steps: no process of a GPU
    rec.op = std::string(op_name(step.op()));
    rec.started = sim_now();
    if (reports) running_[i] = rec;  // under way (no result yet)
    std::string detail;
    Errno e = run_step(step, ps, detail);
    while ((e == Errno::Again || e == Errno::Busy) && rec.retries < s.retries) {
      ++rec.retries;
      sc_core::wait(to_sc(s.retry_interval));
      detail.clear();
      e = run_step(step, ps, detail);
    }
    rec.ended = sim_now();
    rec.result = std::string(driver::errno_name(e));
    running_.erase(i);
    if (reports) records_.push_back(rec);
    const bool go_on = cfg_.workload.on_failure == OnFailure::Continue;
    const std::string who = pod_group
                                ? fmt::format("{} of gpu{}", rec.op, s.gpu)
                                : fmt::format("{} on gpu{} process {}", rec.op, s.gpu, s.process);
    if (!detail.empty()) {
      if (reports)
        fail(i, fmt::format("step {} ({}) at {}: {}", i, who, pretty(rec.started), detail));
      if (go_on) continue;
      return;
    }
    if (e != s.expect) {
      if (reports)
        fail(i, fmt::format("step {} ({}) at {}: returned {}, expected {}", i, who,
                            pretty(rec.started), rec.result, driver::errno_name(s.expect)));
      if (go_on) continue;
      return;
    }
  }
  if (pod_group && !owned_[key.first]) return;
  HostNote done;
  done.kind = HostNote::Kind::GroupDone;
  done.origin = key.first;
  net_.publish(std::move(done));
}

// One step, simulated: what it returned; `detail` says why the run cannot go on (a name the
// process does not have, say), whatever the errno.
struct ScenarioRunner::StepRun {
  ScenarioRunner& r;
  const StepCommon& s;
  ProcessState& ps;
  std::string& detail;
  GpuNode& node;
  driver::DriverShell& drv;
  driver::Driver& d;
  driver::ProcessId p;

  // The entry of `table` named `name`, or null (and `detail` says so).
  template <class Table>
  auto* lookup(Table& table, const std::string& name, const char* what) {
    auto it = table.find(name);
    if (it == table.end()) {
      detail = fmt::format("no {} named \"{}\"", what, name);
      return static_cast<decltype(&it->second)>(nullptr);
    }
    return &it->second;
  }

  Errno operator()(const AllocStep& a) {
    const driver::Domain dom =
        a.domain == AllocDomain::Gtt ? driver::Domain::Gtt : driver::Domain::Vram;
    auto res = drv.call(d.gem_create(p, a.size, dom));
    if (res.ok()) ps.buffers[a.name] = res.value;
    return res.err;
  }
  Errno operator()(const ExportStep& x) {
    auto* gem = lookup(ps.buffers, x.buffer, "buffer");
    if (!gem) return Errno::Ok;
    auto res = drv.call(d.export_handle(p, *gem));
    if (res.ok()) {
      r.handles_[s.gpu][x.name] = res.value;
      notify_event(r.handle_ev_);
    }
    return res.err;
  }
  Errno operator()(const SendHandleStep& x) {
    auto* h = lookup(r.handles_[s.gpu], x.handle, "handle");
    if (!h) {
      // The receiver's import would wait for it for ever: tell it that it will not come.
      if (r.cfg_.workload.on_failure == OnFailure::Continue) {
        HostNote n;
        n.kind = HostNote::Kind::HandleLost;
        n.origin = s.gpu;
        n.index = x.to;
        n.text = x.as;
        r.net_.publish(std::move(n));
      }
      return Errno::Ok;
    }
    // It reaches the other GPU's process over the hosts' network.
    HostNote n;
    n.kind = HostNote::Kind::Handle;
    n.origin = s.gpu;
    n.index = x.to;
    n.a = h->lo;
    n.b = h->hi;
    n.text = x.as;
    r.net_.publish(std::move(n));
    return Errno::Ok;
  }
  Errno operator()(const SendFdStep& x) {
    auto* gem = lookup(ps.buffers, x.buffer, "buffer");
    if (!gem) return Errno::Ok;
    auto fd = drv.call(d.prime_handle_to_fd(p, *gem));
    if (!fd.ok()) return fd.err;
    // Over a Unix socket (SCM_RIGHTS) to the other process, which gets its own fd for the
    // buffer; this process closes its own once it is sent.
    auto passed = d.pass_fd(p, fd.value, x.to_process);
    const Errno closed = drv.call(d.close_fd(p, fd.value));
    if (!passed.ok()) return passed.err;
    r.states_[{s.gpu, x.to_process}].fds[x.as] = passed.value;
    r.fds_arrived_[{s.gpu, x.to_process}].insert(x.as);
    notify_event(r.fd_ev_);
    return closed;
  }
  // An fd another process of this GPU sends (send_fd) may not be here yet: wait for its
  // first arrival (once it has come, a missing fd is one this process closed).
  void await_fd(const std::string& name) {
    const Key me{s.gpu, s.process};
    const auto sent = r.fds_sent_.find(me);
    if (sent == r.fds_sent_.end() || !sent->second.count(name)) return;
    while (!r.fds_arrived_[me].count(name))
      sc_core::wait(r.fd_ev_);
  }
  Errno operator()(const ImportStep& x) {
    // The handle may still be on its way from another GPU.
    while (!r.handles_[s.gpu].count(x.handle)) {
      if (r.lost_handles_[s.gpu].count(x.handle)) {
        detail =
            fmt::format("the handle \"{}\" will not come: the step sending it failed", x.handle);
        return Errno::Ok;
      }
      sc_core::wait(r.handle_ev_);
    }
    auto res = drv.call(d.import_handle(p, r.handles_[s.gpu].at(x.handle)));
    if (res.ok()) ps.fds[x.name] = res.value;
    return res.err;
  }
  Errno operator()(const MapStep& m) {
    driver::GemHandle gem = 0;
    const bool from_fd = m.from == MapStep::From::Fd;
    if (from_fd) {
      await_fd(m.source);
      auto* fd = lookup(ps.fds, m.source, "fd");
      if (!fd) return Errno::Ok;
      auto res = drv.call(d.prime_fd_to_handle(p, *fd));
      if (!res.ok()) return res.err;
      gem = res.value;
      ps.buffers[m.name] = gem;
    } else {
      auto* g = lookup(ps.buffers, m.source, "buffer");
      if (!g) return Errno::Ok;
      gem = *g;
    }
    const std::uint64_t bytes = d.gem_size(p, gem).count();
    const std::uint64_t va = ps.next_va;
    const Errno e = drv.call(d.gem_va_map(p, gem, va));
    if (e == Errno::Ok) {
      ps.mappings[m.name] = Mapping{va, bytes, gem, !from_fd};
      const std::uint64_t two_mib = 2ull << 20;
      ps.next_va += (bytes + two_mib - 1) / two_mib * two_mib;
    }
    return e;
  }
  Errno operator()(const AccessStep& a) {
    std::vector<AccessRegion> regions;
    for (const std::string& m : a.mappings) {
      auto* map = lookup(ps.mappings, m, "mapping");
      if (!map) return Errno::Ok;
      regions.push_back({map->va, map->bytes, map->local});
    }
    if (!node.agent.finished()) {
      detail = "the GPU's compute agent is already running an access phase";
      return Errno::Ok;
    }
    TrafficConfig t = r.cfg_.workload.traffic;
    if (a.accesses) t.accesses = *a.accesses;
    if (a.duration) t.duration = *a.duration;
    if (a.outstanding) t.outstanding = *a.outstanding;
    if (a.read_fraction) t.read_fraction = *a.read_fraction;
    if (a.access_size) t.access_size = *a.access_size;
    // Poisson: one data-carrying packet every mean gap fills offered_load of the ports.
    const Time data_packet =
        wire_time(tl_bytes(t.access_size.count(), r.cfg_.fabric.port), r.cfg_.fabric.port);
    const Time gap = Time::ps(static_cast<std::int64_t>(static_cast<double>(data_packet.as_ps()) /
                                                        (t.offered_load * r.cfg_.fabric.planes)));
    std::optional<std::vector<TraceEntry>> replay;  // a trace given: this GPU's part of it
    if (r.replay_ && s.gpu < r.replay_->size()) replay = (*r.replay_)[s.gpu];
    if (r.on_first_access_) std::exchange(r.on_first_access_, nullptr)();
    if (r.host_) r.host_->phase_begin();
    node.agent.start(t, std::move(regions), p, gap, std::move(replay));
    while (!node.agent.finished())
      sc_core::wait(node.agent.done());
    if (r.host_) r.host_->phase_end();
    return Errno::Ok;
  }
  // The collective at every size: before each size a barrier and the input filled in, then
  // each call a barrier and the call, timed from the barrier passed to the call done; after
  // the last size's calls, the output checked (with functional data).
  // The executor of participant `rank` of `group` on this GPU, over the windows this process
  // mapped (null when one is missing: `detail` names it).
  std::unique_ptr<coll::Runner> runner_for(const CollectiveRun& group, std::uint32_t rank) {
    const CollectiveConfig& k = r.cfg_.workload.collective;
    coll::Runner::Env env;
    env.rank = rank;
    for (const std::string& m : group.windows(rank)) {
      if (m.empty()) {
        env.window_va.push_back(0);
        continue;
      }
      auto* map = lookup(ps.mappings, m, "mapping");
      if (!map) return nullptr;
      env.window_va.push_back(map->va);
    }
    env.layout = group.layout();
    env.access_size = static_cast<std::uint32_t>(k.access_size.count());
    env.outstanding = k.outstanding;
    env.poll_interval = k.poll_interval;
    env.reduce_ps_per_byte = 1e12 / r.cfg_.gpu.compute.reduce_bandwidth.bytes_per_second();
    return std::make_unique<coll::Runner>(std::move(env));
  }
  // Runs `prog` on the GPU's compute agent to its end; false when an access was not served.
  bool execute(coll::Runner& runner, const coll::Program& prog, std::uint64_t value,
               const coll::Shape* shape) {
    runner.start(prog, value, shape, sim_now());
    node.agent.run_program(runner, p);
    while (node.agent.running(runner))
      sc_core::wait(node.agent.done());
    return !runner.failed();
  }

  Errno operator()(const CollectiveStep& c) {
    CollectiveRun& run = *r.collective_;
    const std::unique_ptr<coll::Runner> made = runner_for(run, c.rank);
    if (!made) return Errno::Ok;
    coll::Runner& runner = *made;
    const bool data = r.cfg_.gpu.vram.functional_data;
    if (!node.agent.finished()) {
      detail = "the GPU's compute agent is already running an access phase";
      return Errno::Ok;
    }
    if (r.on_first_access_) std::exchange(r.on_first_access_, nullptr)();
    if (r.host_) r.host_->phase_begin();
    auto execute = [&](const coll::Program& prog, std::uint64_t value, const coll::Shape* shape) {
      return this->execute(runner, prog, value, shape);
    };
    std::uint64_t value = 0;
    bool ok = true;
    for (std::size_t i = 0; ok && i < run.shapes().size(); ++i) {
      const coll::Shape& shape = run.shapes()[i];
      // Nobody still reads the last size's input when it is filled in.
      // The fill and the check run with functional data off too (their loads and stores,
      // nothing compared), so that every call's time is the same either way.
      const coll::Shape* known = data ? &shape : nullptr;
      ok = execute(run.barrier(c.rank), ++value, nullptr);
      if (ok) {
        const coll::Program f = coll::fill(shape, c.rank);
        ok = execute(f, value, known);
      }
      for (std::uint32_t call = 0; ok && call < run.calls_per_size(); ++call) {
        ok = execute(run.barrier(c.rank), ++value, nullptr);
        const Time start = sim_now();
        if (ok) ok = execute(run.body(i, c.rank), value, &shape);
        if (ok) run.note_call(c.rank, i, call, start, sim_now());
      }
      if (ok) {
        const std::uint64_t checked = runner.checked(), wrong = runner.wrong();
        const coll::Program chk = coll::check(shape, c.rank);
        ok = execute(chk, value, known);
        if (ok && data) run.note_check(i, runner.checked() - checked, runner.wrong() - wrong);
        if (ok && runner.wrong() > wrong) {
          if (r.host_) r.host_->phase_end();
          detail = fmt::format(
              "participant {} (gpu{}): {} of {} elements of its output at {} B "
              "are wrong after the calls (found at {})",
              c.rank, s.gpu, runner.wrong() - wrong, runner.checked() - checked, shape.bytes,
              pretty(sim_now()));
          return Errno::Ok;
        }
      }
    }
    if (r.host_) r.host_->phase_end();
    if (!ok)
      detail = fmt::format(
          "participant {} (gpu{}): a load or store of the collective was not served (a fault, "
          "a refusal or a GPU down): it stops",
          c.rank, s.gpu);
    return Errno::Ok;
  }
  // A GPU's part of a model trace: each node once every node it depends on has finished.
  // Ready nodes run side by side: compute for its time, communication as a program on the
  // compute agent (programs share it, each with its own outstanding accesses); a group's
  // calls run one after another, in their order. One loop drives it all (no thread per node:
  // a trace may hold a million).
  Errno operator()(const ModelStep&) {
    ModelRun& run = *r.model_;
    const PodConfig& cfg = r.cfg_;
    const ModelTrace& t = run.trace();
    const std::uint32_t gpu = s.gpu;
    // This GPU's nodes, what each waits for, and who waits for each.
    std::vector<std::size_t> waiting(t.nodes.size(), 0);
    std::vector<std::vector<std::size_t>> children(t.nodes.size());
    std::size_t total = 0, finished = 0;
    for (std::size_t i = 0; i < t.nodes.size(); ++i) {
      if (t.nodes[i].gpu != gpu) continue;
      ++total;
      waiting[i] = t.nodes[i].deps.size();
      for (std::size_t d : t.nodes[i].deps)
        children[d].push_back(i);
    }
    const double vram_bps = cfg.gpu.vram.channel_bandwidth.bytes_per_second() *
                            static_cast<double>(cfg.gpu.vram.channels());
    // Compute under way, by when it ends; communication ready, and under way.
    using Busy = std::tuple<Time, std::size_t, Time>;             // end, node, start
    constexpr Time kNever = Time::ps(1'000'000'000'000'000'000);  // 10^6 s
    std::priority_queue<Busy, std::vector<Busy>, std::greater<>> computing;
    // Ready communications: those that may start now (theirs their group's next call), in node
    // order, and the others by group and call.
    std::set<std::size_t> launchable;
    std::map<std::size_t, std::map<std::size_t, std::size_t>> held;  // group -> call -> node
    struct Comm {
      std::size_t node;
      ModelRun::Comm call;
      coll::Runner* runner;
      bool body = false;  // the call's barrier is done: its body runs
      Time start;
    };
    std::vector<Comm> comms;
    std::map<std::size_t, std::unique_ptr<coll::Runner>> runners;  // by group
    // By group, the call this GPU makes next: under way, or not yet started. A node whose call
    // it is may start at once (no other node of this GPU makes that call).
    std::map<std::size_t, std::size_t> next_call;
    auto ready = [&](std::size_t i) {
      const ModelNode& n = t.nodes[i];
      if (n.type != ModelNode::Type::Compute) {
        const ModelRun::Comm c = run.comm(i);
        if (c.call == next_call[c.group])
          launchable.insert(i);
        else
          held[c.group][c.call] = i;
        return;
      }
      Time d = n.duration ? *n.duration : Time{};
      if (!n.duration) {
        const double ps = std::ceil(std::max(n.flops / cfg.gpu.compute.peak_flops,
                                             static_cast<double>(n.memory_bytes) / vram_bps) *
                                    1e12);
        d = ps < 1e18 ? Time::ps(static_cast<std::int64_t>(ps)) : kNever;
      }
      // A time no run reaches stands for work too long to finish (the run then ends
      // unfinished at sim.max_time); nothing ends past it.
      d = std::min(d, kNever);
      const Time now = sim_now();
      computing.emplace(now.as_ps() > INT64_MAX - d.as_ps() ? Time::max() : now + d, i, now);
    };
    auto finish = [&](std::size_t i, Time start) {
      run.note(i, start, sim_now());
      ++finished;
      for (std::size_t c : children[i])
        if (--waiting[c] == 0) ready(c);
    };
    for (std::size_t i = 0; i < t.nodes.size(); ++i)
      if (t.nodes[i].gpu == gpu && waiting[i] == 0) ready(i);
    if (r.on_first_access_) std::exchange(r.on_first_access_, nullptr)();
    if (r.host_) r.host_->phase_begin();
    ComputeAgent& agent = node.agent;
    auto start_program = [&](Comm& c) {
      CollectiveRun& grp = run.group(c.call.group);
      const std::uint32_t rank = grp.rank_of(gpu);
      c.runner->start(c.body ? grp.body(grp.call_shape(c.call.call), rank) : grp.barrier(rank),
                      c.call.call + 1, nullptr, sim_now());
      agent.run_program(*c.runner, p);
    };
    bool failed = false;
    while (!failed && finished < total) {
      // Compute that has ended.
      while (!computing.empty() && std::get<0>(computing.top()) <= sim_now()) {
        const auto [end, i, start] = computing.top();
        computing.pop();
        finish(i, start);
      }
      // Communication whose program has ended: its body next, or the node done.
      for (std::size_t k = 0; k < comms.size();) {
        Comm& c = comms[k];
        if (agent.running(*c.runner)) {
          ++k;
          continue;
        }
        if (c.runner->failed()) {
          failed = true;
          break;
        }
        if (!c.body) {
          c.body = true;
          start_program(c);
          ++k;
          continue;
        }
        const std::size_t next = ++next_call[c.call.group];
        if (const auto h = held.find(c.call.group); h != held.end()) {
          if (const auto n = h->second.find(next); n != h->second.end()) {
            launchable.insert(n->second);
            h->second.erase(n);
          }
        }
        finish(c.node, c.start);
        comms.erase(comms.begin() + static_cast<std::ptrdiff_t>(k));
      }
      // Every ready communication whose group is free and whose call is the next.
      while (!failed && !launchable.empty()) {
        const std::size_t i = *launchable.begin();
        launchable.erase(launchable.begin());
        const ModelRun::Comm c = run.comm(i);
        auto& runner = runners[c.group];
        if (!runner) runner = runner_for(run.group(c.group), run.group(c.group).rank_of(gpu));
        if (!runner) {
          failed = true;
          break;
        }
        comms.push_back(Comm{i, c, runner.get(), false, sim_now()});
        start_program(comms.back());
      }
      if (failed || finished == total) break;
      // Until the next compute ends or a program does.
      if (computing.empty())
        sc_core::wait(agent.done());
      else
        sc_core::wait(to_sc(std::get<0>(computing.top()) - sim_now()), agent.done());
    }
    if (r.host_) r.host_->phase_end();
    if (failed) {
      // What still runs on the agent (a peer's failure stops the pod) keeps its programs.
      for (auto& [g, runner] : runners)
        if (runner && agent.running(*runner)) r.parked_.push_back(std::move(runner));
      if (detail.empty())
        detail = fmt::format(
            "gpu{}: a load or store of the model trace's communication was not served (a fault, "
            "a refusal or a GPU down): it stops",
            gpu);
    }
    return Errno::Ok;
  }
  Errno operator()(const CloseFdStep& c) {
    await_fd(c.fd);
    auto* fd = lookup(ps.fds, c.fd, "fd");
    if (!fd) return Errno::Ok;
    const Errno e = drv.call(d.close_fd(p, *fd));
    ps.fds.erase(c.fd);
    return e;
  }
  Errno operator()(const CloseStep& c) {
    auto* gem = lookup(ps.buffers, c.buffer, "buffer");
    if (!gem) return Errno::Ok;
    const Errno e = drv.call(d.gem_close(p, *gem));
    ps.buffers.erase(c.buffer);
    return e;
  }
  Errno operator()(const UnmapStep& u) {
    auto* map = lookup(ps.mappings, u.mapping, "mapping");
    if (!map) return Errno::Ok;
    const Errno e = drv.call(d.gem_va_unmap(p, map->gem, map->va));
    ps.mappings.erase(u.mapping);
    return e;
  }
  Errno operator()(const CpuMapStep& c) {
    auto* gem = lookup(ps.buffers, c.buffer, "buffer");
    if (!gem) return Errno::Ok;
    return drv.call(d.gem_cpu_map(p, *gem));
  }
  Errno operator()(const WaitStep& w) {
    sc_core::wait(to_sc(w.for_));
    return Errno::Ok;
  }
  Errno operator()(const ExitStep&) {
    drv.call(d.process_exit(p));
    ps = ProcessState{};
    return Errno::Ok;
  }
  Errno operator()(const BarrierStep& b) {
    Barrier& bar = r.barriers_.at(b.name);
    r.arrive(bar, s.gpu);
    while (bar.arrived < bar.expected)
      sc_core::wait(bar.ev);
    return Errno::Ok;
  }
  Errno operator()(const ResetNodeStep& x) {
    if (r.owned_[s.gpu]) node.reset(x.down_for);  // on the rank that holds the GPU
    return Errno::Ok;
  }
  Errno operator()(const SignalStep& x) {
    if (r.owned_[s.gpu]) d.signal(static_cast<driver::ProcessId>(x.to_process));
    return Errno::Ok;
  }
  Errno operator()(const PpodCommitStep& x) {
    return drv.call(d.ppod_commit(driver::PpodInfo{static_cast<AccelId>(s.gpu), x.size}));
  }
  Errno operator()(const VpodCommitStep& x) {
    driver::VpodInfo v;
    v.id = x.id;
    v.size = x.size;
    v.members.assign(kMaxAccels, false);
    for (std::uint32_t m : x.members)
      if (m < kMaxAccels) v.members[m] = true;
    return drv.call(d.vpod_commit(std::move(v)));
  }
  Errno operator()(const ActivateStep&) { return drv.call(d.activate()); }
  Errno operator()(const DeactivateStep&) { return drv.call(d.deactivate()); }
  Errno operator()(const FaultStep& f) {
    if (!r.owned_[s.gpu]) return Errno::Ok;  // the rank that holds the GPU does it
    switch (f.fault) {
      case FaultKind::FirmwareError: node.mailbox.answer_with_error(f.status, f.count); break;
      case FaultKind::FirmwareStall: node.mailbox.stall_until(sim_now() + f.for_); break;
      case FaultKind::FirmwareDrop: node.mailbox.drop_next(f.count); break;
      case FaultKind::PinFailure: d.fail_next(driver::FailPoint::Pin, f.count); break;
      case FaultKind::MapFailure: d.fail_next(driver::FailPoint::Map, f.count); break;
      case FaultKind::RingCorrupt: node.mailbox.corrupt_next(f.count); break;
      case FaultKind::ImportAllocFailure:
        d.fail_next(driver::FailPoint::ImportAlloc, f.count);
        break;
      case FaultKind::ExportAllocFailure:
        d.fail_next(driver::FailPoint::ExportAlloc, f.count);
        break;
      case FaultKind::MessageDelay: node.mailbox.delay_next_send(f.for_); break;
      case FaultKind::LinkStall: break;  // run_step, on every rank
    }
    return Errno::Ok;
  }
};

void ScenarioRunner::stall_links(std::uint32_t gpu, Time for_) {
  const Time until = for_ >= Time::max() - sim_now() ? Time::max() : sim_now() + for_;  // for good
  for (std::uint32_t p = 0; p < fabric_.planes(); ++p)
    fabric_.plane(p).gpu_link(static_cast<AccelId>(gpu)).stall_until(until);
}

Errno ScenarioRunner::run_step(const Step& s, ProcessState& ps, std::string& detail) {
  // A link stall acts on every rank (either end of a link may be here), through the fabric.
  if (const auto* f = std::get_if<FaultStep>(&s.kind); f && f->fault == FaultKind::LinkStall) {
    stall_links(s.common.gpu, f->for_);
    return Errno::Ok;
  }
  // Another rank's GPU, not built here: of its steps only the pod-level ones run here
  // (processes run where their GPU is), and they act there.
  if (!gpus_[s.common.gpu]) return Errno::Ok;
  GpuNode& node = *gpus_[s.common.gpu];
  const auto p = static_cast<driver::ProcessId>(s.common.process);
  StepRun run{*this, s.common, ps, detail, node, node.driver, node.driver.driver(), p};
  return std::visit(run, s.kind);
}

// ---- direct setup ----------------------------------------------------------------------------

namespace {
// Whether direct setup carries out a step (a process's buffers, their mappings, exports, the
// handles it sends, its imports, their mappings and closings), or leaves it to run.
bool set_up_directly(const StepKind& kind) {
  return std::visit(
      Overload{[](const AllocStep&) { return true; }, [](const ExportStep&) { return true; },
               [](const SendHandleStep&) { return true; }, [](const MapStep&) { return true; },
               [](const ImportStep&) { return true; }, [](const CloseFdStep&) { return true; },
               [](const auto&) { return false; }},
      kind);
}
}  // namespace

// One setup step (step `index`), carried out on the drivers without simulating it; an error
// is a failure of the run (and the setup stops).
struct ScenarioRunner::DirectSetup {
  ScenarioRunner& r;
  std::size_t index;
  const Step& step;
  const StepCommon& s;
  ProcessState& ps;
  GpuNode& node;
  driver::Driver& d;
  driver::ProcessId p;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t>& messages;  // from, to

  void error(const std::string& what) {
    r.failures_.push_back(fmt::format("direct setup, step {} ({} on gpu{} process {}): {}", index,
                                      op_name(step.op()), s.gpu, s.process, what));
  }

  void operator()(const AllocStep& a) {
    const std::uint64_t pages = (a.size.count() + kPageSize - 1) / kPageSize;
    Vram::Pages got;
    bool answered = false;
    const std::uint64_t id = node.vram.allocate(pages, [&](Vram::Pages v) {
      got = std::move(v);
      answered = true;
    });
    if (!answered) {
      // Only freed pages still being cleared could hold it: the protocol would wait for
      // the clearing engine, which direct setup (no simulated time) cannot. The request
      // is withdrawn, so its callback (holding this frame's locals) never runs.
      node.vram.cancel_allocation(id);
      error(
          "VRAM has the pages only once the clearing engine has zeroed them; "
          "use workload.setup=protocol");
      return;
    }
    if (!got) {
      error("VRAM cannot hold the buffer (ENOMEM)");
      return;
    }
    auto res = d.direct_gem_create(p, std::move(*got));
    if (!res.ok()) error(std::string(errno_name(res.err)));
    ps.buffers[a.name] = res.value;
  }
  void operator()(const ExportStep& x) {
    auto res = d.direct_export(p, ps.buffers.at(x.buffer));
    if (!res.ok()) error(std::string(errno_name(res.err)));
    r.handles_[s.gpu][x.name] = res.value;
  }
  void operator()(const SendHandleStep& x) {
    r.handles_[x.to][x.as] = r.handles_[s.gpu].at(x.handle);
  }
  void operator()(const ImportStep& x) {
    const driver::UalinkHandle h = r.handles_[s.gpu].at(x.handle);
    const AccelId e = h.exporter();
    driver::Driver& exporter = r.gpus_[e]->driver.driver();
    // The connection, as HELLO and HELLO_ACK leave it (both ends), then NPA_REQ and
    // NPA_RSP.
    const bool fresh = d.connection(e) != driver::ConnState::Established;
    d.direct_connect(e);
    exporter.direct_connect(static_cast<AccelId>(s.gpu));
    if (fresh) {
      ++messages[{s.gpu, e}];
      ++messages[{e, s.gpu}];
    }
    auto g = exporter.direct_grant(static_cast<AccelId>(s.gpu), h);
    if (!g.ok()) {
      error(fmt::format("gpu{} refused the import: {}", e, errno_name(g.err)));
      return;
    }
    ++messages[{s.gpu, e}];
    ++messages[{e, s.gpu}];
    auto res = d.direct_import(p, h, g.value);
    if (!res.ok()) error(std::string(errno_name(res.err)));
    ps.fds[x.name] = res.value;
  }
  void operator()(const MapStep& m) {
    driver::GemHandle gem = 0;
    const bool from_fd = m.from == MapStep::From::Fd;
    if (from_fd) {
      auto res = d.direct_prime_fd_to_handle(p, ps.fds.at(m.source));
      if (!res.ok()) {
        error(std::string(errno_name(res.err)));
        return;
      }
      gem = res.value;
      ps.buffers[m.name] = gem;
    } else {
      gem = ps.buffers.at(m.source);
    }
    const std::uint64_t bytes = d.gem_size(p, gem).count();
    const std::uint64_t va = ps.next_va;
    const Errno e = d.direct_gem_va_map(p, gem, va);
    if (e != Errno::Ok) {
      error(std::string(errno_name(e)));
      return;
    }
    ps.mappings[m.name] = Mapping{va, bytes, gem, !from_fd};
    const std::uint64_t two_mib = 2ull << 20;
    ps.next_va += (bytes + two_mib - 1) / two_mib * two_mib;
  }
  void operator()(const CloseFdStep& c) {
    const Errno e = d.direct_close_fd(p, ps.fds.at(c.fd));
    if (e != Errno::Ok) error(std::string(errno_name(e)));
    ps.fds.erase(c.fd);
  }
  void operator()(const auto&) {}  // not a setup step (set_up_directly says so first)
};

std::vector<Step> ScenarioRunner::direct_setup(const std::vector<Step>& steps) {
  // The protocol's order: each process's setup steps in its own list order (what a process
  // holds, its handles, NPA ranges and VAs, follows from that order), an import only once its
  // handle has been sent (in the protocol the process waits for it there). Processes go in
  // turn, each as far as it can; what the other steps need (handles, mappings, VAs) is
  // recorded as run_step records it. Barriers and access phases are left to run.
  std::vector<Step> rest;
  std::map<Key, std::deque<std::size_t>> queued;  // each process's setup steps, in order
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (set_up_directly(steps[i].kind))
      queued[Key{steps[i].common.gpu, steps[i].common.process}].push_back(i);
    else
      rest.push_back(steps[i]);
  }
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> messages;  // from, to
  for (bool progress = true; progress && failures_.empty();) {
    progress = false;
    for (auto& [key, q] : queued) {
      while (!q.empty() && failures_.empty()) {
        const std::size_t i = q.front();
        const Step& step = steps[i];
        const StepCommon& s = step.common;
        if (const auto* imp = std::get_if<ImportStep>(&step.kind);
            imp && !handles_[s.gpu].count(imp->handle))
          break;  // waits for its handle
        GpuNode& node = *gpus_[s.gpu];
        const auto p = static_cast<driver::ProcessId>(s.process);
        DirectSetup setup{*this, i, step, s, states_[key], node, node.driver.driver(), p, messages};
        std::visit(setup, step.kind);
        q.pop_front();
        progress = true;
      }
    }
  }
  for (const auto& [key, q] : queued)
    if (!q.empty() && failures_.empty()) {
      const Step& step = steps[q.front()];
      failures_.push_back(fmt::format(
          "direct setup, step {} ({} on gpu{} process {}): waits for handle {}, which no step "
          "sends it first (imports that wait on each other across processes, or no send at all)",
          q.front(), op_name(step.op()), key.first, key.second,
          std::get<ImportStep>(step.kind).handle));
      break;
    }
  // The interrupt rings those messages went through, set up on both sides.
  for (const auto& [pair, n] : messages) {
    gpus_[pair.first]->mailbox.direct_ring(static_cast<AccelId>(pair.second), 0, true, n);
    gpus_[pair.second]->mailbox.direct_ring(static_cast<AccelId>(pair.first), 0, false, n);
  }
  return rest;
}

void ScenarioRunner::record_unfinished() {
  for (auto& [index, rec] : running_) {
    rec.ended = sim_now();
    if (rec.result.empty()) rec.result = "UNFINISHED";  // else NOT_STARTED: its `at` to come
    records_.push_back(rec);
  }
  running_.clear();
}

}  // namespace podsim
