#include "sim/pod/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <utility>

#include "fabric/framing.hpp"

namespace podsim {

using driver::Errno;

namespace {
std::string op_name(StepOp op) {
  return std::string(enum_name(std::span<const EnumName<StepOp>>(kStepOpNames), op));
}
}  // namespace

std::vector<StepConfig> ScenarioRunner::all_to_all_steps(const PodConfig& cfg) {
  const std::uint32_t n = cfg.pod.gpus;
  const auto& w = cfg.workload;
  std::vector<bool> initiator(n, w.initiators.empty());
  for (std::uint32_t g : w.initiators)
    initiator[g] = true;
  std::vector<StepConfig> steps;
  auto step = [&](std::uint32_t gpu, StepOp op) -> StepConfig& {
    StepConfig s;
    s.gpu = gpu;
    s.op = op;
    steps.push_back(std::move(s));
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
    step(g, StepOp::Alloc).size = w.buffer_size;
    steps.back().name = "buf";
    step(g, StepOp::Map).buffer = "buf";
    steps.back().name = "local";
    step(g, StepOp::Export).buffer = "buf";
    steps.back().name = fmt::format("h{}", g);
    for (std::uint32_t q : importers_of(g)) {
      step(g, StepOp::SendHandle).handle = fmt::format("h{}", g);
      steps.back().to = q;
    }
    for (std::uint32_t q : peers_of(g)) {
      StepConfig& imp = step(g, StepOp::Import);
      imp.handle = fmt::format("h{}", q);
      imp.name = fmt::format("fd{}", q);
      imp.retries = 1000;  // a concurrent handshake with the same peer answers EAGAIN
      imp.retry_interval = Time::us(10);
      step(g, StepOp::Map).fd = fmt::format("fd{}", q);
      steps.back().name = fmt::format("m{}", q);
      step(g, StepOp::CloseFd).fd = fmt::format("fd{}", q);
    }
    step(g, StepOp::Barrier).name = "mapped";
    std::vector<std::string> accessed;
    for (std::uint32_t q : peers_of(g))
      if (target[q]) accessed.push_back(fmt::format("m{}", q));
    if (w.traffic.local_fraction > 0) accessed.push_back("local");  // its own buffer too
    if (initiator[g] && !accessed.empty()) {
      StepConfig& acc = step(g, StepOp::Access);
      acc.mappings = accessed;
    }
  }
  return steps;
}

ScenarioRunner::ScenarioRunner(const PodConfig& cfg, std::vector<GpuNode*> gpus,
                               const std::vector<std::vector<TraceEntry>>* replay, HostPhases* host)
    : cfg_(cfg), gpus_(std::move(gpus)), replay_(replay), host_(host), handles_(cfg.pod.gpus) {
  steps_ = cfg.workload.kind == WorkloadKind::Scenario ? cfg.workload.steps : all_to_all_steps(cfg);
  if (cfg.workload.setup == SetupMode::Direct) {
    steps_ = direct_setup(steps_);
    if (!failures_.empty()) return;  // nothing runs: the pod stops at once and reports it
  }
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    const StepConfig& s = steps_[i];
    const Key key = *s.op == StepOp::ResetNode ? Key{0, 0} : Key{s.gpu, s.process};
    groups_[key].push_back(i);
    if (*s.op == StepOp::Barrier) ++barriers_[*s.name].expected;
  }
  for (auto& [key, idx] : groups_) {
    const Key k = key;
    const std::vector<std::size_t> steps = idx;
    spawn_thread(fmt::format("gpu{}_process{}", k.first, k.second).c_str(),
                 [this, k, steps] { run_group(k, steps); });
  }
}

std::vector<std::pair<std::uint32_t, std::uint32_t>> ScenarioRunner::processes() const {
  std::set<std::pair<std::uint32_t, std::uint32_t>> all;
  for (const auto& [key, steps] : groups_)
    if (key.second != 0) all.insert(key);
  for (const auto& [key, state] : states_)  // direct setup's processes, even if they ran nothing
    if (key.second != 0) all.insert(key);
  return {all.begin(), all.end()};
}

void ScenarioRunner::fail(const std::string& what) {
  failures_.push_back(what);
  sc_core::sc_stop();
}

void ScenarioRunner::run_group(Key key, std::vector<std::size_t> steps) {
  ProcessState& ps = states_[key];
  for (std::size_t i : steps) {
    const StepConfig& s = steps_[i];
    if (s.at && *s.at > sim_now()) sc_core::wait(to_sc(*s.at - sim_now()));
    StepRecord rec;
    rec.index = i;
    rec.gpu = s.gpu;
    rec.process = s.process;
    rec.op = op_name(*s.op);
    rec.started = sim_now();
    std::string detail;
    Errno e = run_step(s, ps, detail);
    while ((e == Errno::Again || e == Errno::Busy) && rec.retries < s.retries) {
      ++rec.retries;
      sc_core::wait(to_sc(s.retry_interval));
      detail.clear();
      e = run_step(s, ps, detail);
    }
    rec.ended = sim_now();
    rec.result = std::string(driver::errno_name(e));
    records_.push_back(rec);
    if (!detail.empty()) {
      fail(fmt::format("step {} ({} on gpu{} process {}) at {}: {}", i, rec.op, s.gpu, s.process,
                       pretty(rec.started), detail));
      return;
    }
    if (e != s.expect) {
      fail(fmt::format("step {} ({} on gpu{} process {}) at {}: returned {}, expected {}", i,
                       rec.op, s.gpu, s.process, pretty(rec.started), rec.result,
                       driver::errno_name(s.expect)));
      return;
    }
  }
  if (++finished_groups_ == groups_.size()) notify_event(finished_ev_);
}

Errno ScenarioRunner::run_step(const StepConfig& s, ProcessState& ps, std::string& detail) {
  using namespace driver;
  GpuNode& node = *gpus_[s.gpu];
  DriverShell& drv = node.driver;
  Driver& d = drv.driver();
  const auto p = static_cast<ProcessId>(s.process);
  auto lookup = [&](auto& table, const std::string& name, const char* what) -> auto* {
    auto it = table.find(name);
    if (it == table.end()) {
      detail = fmt::format("no {} named \"{}\"", what, name);
      return static_cast<decltype(&it->second)>(nullptr);
    }
    return &it->second;
  };

  switch (*s.op) {
    case StepOp::Alloc: {
      const Domain dom = s.domain == AllocDomain::Gtt ? Domain::Gtt : Domain::Vram;
      auto r = drv.call(d.gem_create(p, *s.size, dom));
      if (r.ok()) ps.buffers[*s.name] = r.value;
      return r.err;
    }
    case StepOp::Export: {
      auto* gem = lookup(ps.buffers, *s.buffer, "buffer");
      if (!gem) return Errno::Ok;
      auto r = drv.call(d.export_handle(p, *gem));
      if (r.ok()) {
        handles_[s.gpu][*s.name] = r.value;
        notify_event(handle_ev_);
      }
      return r.err;
    }
    case StepOp::SendHandle: {
      auto* h = lookup(handles_[s.gpu], *s.handle, "handle");
      if (!h) return Errno::Ok;
      handles_[*s.to][s.as ? *s.as : *s.handle] = *h;
      notify_event(handle_ev_);
      return Errno::Ok;
    }
    case StepOp::Import: {
      // The handle may still be on its way from another GPU.
      while (!handles_[s.gpu].count(*s.handle))
        sc_core::wait(handle_ev_);
      auto r = drv.call(d.import_handle(p, handles_[s.gpu].at(*s.handle)));
      if (r.ok()) ps.fds[*s.name] = r.value;
      return r.err;
    }
    case StepOp::Map: {
      GemHandle gem = 0;
      if (s.fd) {
        auto* fd = lookup(ps.fds, *s.fd, "fd");
        if (!fd) return Errno::Ok;
        auto r = drv.call(d.prime_fd_to_handle(p, *fd));
        if (!r.ok()) return r.err;
        gem = r.value;
        ps.buffers[*s.name] = gem;
      } else {
        auto* g = lookup(ps.buffers, *s.buffer, "buffer");
        if (!g) return Errno::Ok;
        gem = *g;
      }
      const std::uint64_t bytes = d.gem_size(p, gem).count();
      const std::uint64_t va = ps.next_va;
      const Errno e = drv.call(d.gem_va_map(p, gem, va));
      if (e == Errno::Ok) {
        ps.mappings[*s.name] = Mapping{va, bytes, gem, !s.fd};
        const std::uint64_t two_mib = 2ull << 20;
        ps.next_va += (bytes + two_mib - 1) / two_mib * two_mib;
      }
      return e;
    }
    case StepOp::Access: {
      std::vector<AccessRegion> regions;
      for (const std::string& m : *s.mappings) {
        auto* map = lookup(ps.mappings, m, "mapping");
        if (!map) return Errno::Ok;
        regions.push_back({map->va, map->bytes, map->local});
      }
      if (!node.agent.finished()) {
        detail = "the GPU's compute agent is already running an access phase";
        return Errno::Ok;
      }
      TrafficConfig t = cfg_.workload.traffic;
      if (s.accesses) t.accesses = *s.accesses;
      if (s.duration) t.duration = *s.duration;
      if (s.outstanding) t.outstanding = *s.outstanding;
      if (s.read_fraction) t.read_fraction = *s.read_fraction;
      if (s.access_size) t.access_size = *s.access_size;
      // Poisson: one data-carrying packet every mean gap fills offered_load of the ports.
      const Time data_packet =
          wire_time(tl_bytes(t.access_size.count(), cfg_.fabric.port), cfg_.fabric.port);
      const Time gap = Time::ps(static_cast<std::int64_t>(static_cast<double>(data_packet.as_ps()) /
                                                          (t.offered_load * cfg_.fabric.planes)));
      std::vector<TraceEntry> replay;
      if (replay_ && s.gpu < replay_->size()) replay = (*replay_)[s.gpu];
      if (on_first_access_) std::exchange(on_first_access_, nullptr)();
      if (host_) host_->phase_begin();
      node.agent.start(t, std::move(regions), p, gap, std::move(replay));
      while (!node.agent.finished())
        sc_core::wait(node.agent.done());
      if (host_) host_->phase_end();
      return Errno::Ok;
    }
    case StepOp::CloseFd: {
      auto* fd = lookup(ps.fds, *s.fd, "fd");
      if (!fd) return Errno::Ok;
      const Errno e = drv.call(d.close_fd(p, *fd));
      ps.fds.erase(*s.fd);
      return e;
    }
    case StepOp::Close: {
      auto* gem = lookup(ps.buffers, *s.buffer, "buffer");
      if (!gem) return Errno::Ok;
      const Errno e = drv.call(d.gem_close(p, *gem));
      ps.buffers.erase(*s.buffer);
      return e;
    }
    case StepOp::Unmap: {
      auto* map = lookup(ps.mappings, *s.mapping, "mapping");
      if (!map) return Errno::Ok;
      const Errno e = drv.call(d.gem_va_unmap(p, map->gem, map->va));
      ps.mappings.erase(*s.mapping);
      return e;
    }
    case StepOp::CpuMap: {
      auto* gem = lookup(ps.buffers, *s.buffer, "buffer");
      if (!gem) return Errno::Ok;
      return drv.call(d.gem_cpu_map(p, *gem));
    }
    case StepOp::Wait: sc_core::wait(to_sc(*s.for_)); return Errno::Ok;
    case StepOp::Exit:
      drv.call(d.process_exit(p));
      ps = ProcessState{};
      return Errno::Ok;
    case StepOp::Barrier: {
      Barrier& b = barriers_.at(*s.name);
      if (++b.arrived == b.expected) notify_event(b.ev);
      while (b.arrived < b.expected)
        sc_core::wait(b.ev);
      return Errno::Ok;
    }
    case StepOp::ResetNode: node.reset(*s.down_for); return Errno::Ok;
  }
  return Errno::Ok;
}

// ---- direct setup ----------------------------------------------------------------------------

std::vector<StepConfig> ScenarioRunner::direct_setup(const std::vector<StepConfig>& steps) {
  using namespace driver;
  // The protocol's order, per GPU process: its buffer, mapping and export first (every GPU),
  // then its imports in step order; what the other steps need (handles, mappings, VAs) is
  // recorded as run_step records it. Barriers and access phases are left to run.
  std::vector<StepConfig> rest;
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::uint32_t> messages;  // from, to
  auto error = [&](std::size_t i, const StepConfig& s, const std::string& what) {
    failures_.push_back(fmt::format("direct setup, step {} ({} on gpu{} process {}): {}", i,
                                    op_name(*s.op), s.gpu, s.process, what));
  };
  for (int pass = 0; pass < 2 && failures_.empty(); ++pass) {
    for (std::size_t i = 0; i < steps.size() && failures_.empty(); ++i) {
      const StepConfig& s = steps[i];
      const StepOp op = *s.op;
      const bool first = op == StepOp::Alloc || op == StepOp::Export || op == StepOp::SendHandle ||
                         (op == StepOp::Map && s.buffer);
      const bool second =
          op == StepOp::Import || op == StepOp::CloseFd || (op == StepOp::Map && s.fd);
      if (!first && !second) {
        if (pass == 0) rest.push_back(s);
        continue;
      }
      if ((pass == 0) != first) continue;
      GpuNode& node = *gpus_[s.gpu];
      Driver& d = node.driver.driver();
      const auto p = static_cast<ProcessId>(s.process);
      ProcessState& ps = states_[Key{s.gpu, s.process}];
      switch (op) {
        case StepOp::Alloc: {
          const std::uint64_t pages = (s.size->count() + kPageSize - 1) / kPageSize;
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
            error(i, s,
                  "VRAM has the pages only once the clearing engine has zeroed them; "
                  "use workload.setup=protocol");
            break;
          }
          if (!got) {
            error(i, s, "VRAM cannot hold the buffer (ENOMEM)");
            break;
          }
          auto r = d.direct_gem_create(p, std::move(*got));
          if (!r.ok()) error(i, s, std::string(errno_name(r.err)));
          ps.buffers[*s.name] = r.value;
          break;
        }
        case StepOp::Export: {
          auto r = d.direct_export(p, ps.buffers.at(*s.buffer));
          if (!r.ok()) error(i, s, std::string(errno_name(r.err)));
          handles_[s.gpu][*s.name] = r.value;
          break;
        }
        case StepOp::SendHandle:
          handles_[*s.to][s.as ? *s.as : *s.handle] = handles_[s.gpu].at(*s.handle);
          break;
        case StepOp::Import: {
          const UalinkHandle h = handles_[s.gpu].at(*s.handle);
          const AccelId e = h.exporter();
          Driver& exporter = gpus_[e]->driver.driver();
          // The connection, as HELLO and HELLO_ACK leave it (both ends), then NPA_REQ and
          // NPA_RSP.
          const bool fresh = d.connection(e) != ConnState::Established;
          d.direct_connect(e);
          exporter.direct_connect(static_cast<AccelId>(s.gpu));
          if (fresh) {
            ++messages[{s.gpu, e}];
            ++messages[{e, s.gpu}];
          }
          auto g = exporter.direct_grant(static_cast<AccelId>(s.gpu), h);
          if (!g.ok()) {
            error(i, s, fmt::format("gpu{} refused the import: {}", e, errno_name(g.err)));
            break;
          }
          ++messages[{s.gpu, e}];
          ++messages[{e, s.gpu}];
          auto r = d.direct_import(p, h, g.value);
          if (!r.ok()) error(i, s, std::string(errno_name(r.err)));
          ps.fds[*s.name] = r.value;
          break;
        }
        case StepOp::Map: {
          GemHandle gem = 0;
          if (s.fd) {
            auto r = d.direct_prime_fd_to_handle(p, ps.fds.at(*s.fd));
            if (!r.ok()) {
              error(i, s, std::string(errno_name(r.err)));
              break;
            }
            gem = r.value;
            ps.buffers[*s.name] = gem;
          } else {
            gem = ps.buffers.at(*s.buffer);
          }
          const std::uint64_t bytes = d.gem_size(p, gem).count();
          const std::uint64_t va = ps.next_va;
          const Errno e = d.direct_gem_va_map(p, gem, va);
          if (e != Errno::Ok) {
            error(i, s, std::string(errno_name(e)));
            break;
          }
          ps.mappings[*s.name] = Mapping{va, bytes, gem, !s.fd};
          const std::uint64_t two_mib = 2ull << 20;
          ps.next_va += (bytes + two_mib - 1) / two_mib * two_mib;
          break;
        }
        case StepOp::CloseFd: {
          const Errno e = d.direct_close_fd(p, ps.fds.at(*s.fd));
          if (e != Errno::Ok) error(i, s, std::string(errno_name(e)));
          ps.fds.erase(*s.fd);
          break;
        }
        default: break;
      }
    }
  }
  // The interrupt rings those messages went through, set up on both sides.
  for (const auto& [pair, n] : messages) {
    gpus_[pair.first]->mailbox.direct_ring(static_cast<AccelId>(pair.second), 0, true, n);
    gpus_[pair.second]->mailbox.direct_ring(static_cast<AccelId>(pair.first), 0, false, n);
  }
  return rest;
}

}  // namespace podsim
