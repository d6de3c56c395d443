#include "sim/pod/pod.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

#include "fabric/traffic.hpp"
#include "sim/core/byte_io.hpp"
#include "sim/core/stat_pack.hpp"
#include "sim/kernel/stats_collector.hpp"
#include "sim/pod/collective_run.hpp"
#include "sim/pod/model_run.hpp"
#include "sim/pod/stats_json.hpp"

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
// A rank's share of `n` (rounded up), `ranks` may be null (one rank).
std::size_t share(std::size_t n, const RankComm* ranks) {
  const std::size_t r = ranks ? ranks->ranks() : 1;
  return (n + r - 1) / r;
}
}  // namespace

// A GPU another rank simulates, not built here: only its name in the object tree, where rank 0
// puts its stats as that rank wrote them.
struct Pod::ElsewhereGpu final : sc_core::sc_object {
  explicit ElsewhereGpu(const std::string& name) : sc_object(name.c_str()) {}
  const char* kind() const override { return "podsim_gpu_elsewhere"; }
};

Pod::Pod(sc_core::sc_module_name name, const PodConfig& cfg, SocketTap* tap, RankComm* ranks)
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
      // Packets for the accesses this rank's GPUs keep in flight (the pool grows if need be).
      pool_(share(cfg.pod.gpus, ranks) * (cfg.workload.traffic.outstanding + 8)),
      summary_(cfg.fabric.planes, cfg.sim.sample_interval) {
  host_.count(events_);
  if (ranks && ranks->ranks() > 1) {
    comm_ = ranks;
    ranks_ = ranks->ranks();
    host_.keep_small_pages();
    plan_ = plan_partition(cfg, ranks_);
    for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g)
      owned_[g] = plan_.gpu[g] == ranks->rank();
  }
  fabric_ = std::make_unique<Fabric>("fabric", cfg.fabric, cfg.pod.gpus, events_, cfg.seed);
  // A rank builds only the GPUs it simulates; another rank's GPU is a bare object of its name,
  // where rank 0 puts that GPU's stats when they arrive. A direct setup writes both ends of
  // every import at once (the exporter's grant, the importer's mapping), so there every rank
  // builds every GPU, and those of other ranks stay still.
  const bool build_all = !comm_ || cfg.workload.setup == SetupMode::Direct;
  std::vector<GpuNode*> nodes;
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g) {
    auto id = static_cast<AccelId>(g);
    const std::string name = fmt::format("gpu{}", g);
    if (g % cfg.pod.gpus_per_host == 0) hosts_.push_back(std::make_unique<driver::Host>());
    if (!owned_[g] && !build_all) {
      gpus_.push_back(nullptr);
      elsewhere_.push_back(std::make_unique<ElsewhereGpu>(name));
      nodes.push_back(nullptr);
      continue;
    }
    gpus_.push_back(std::make_unique<GpuNode>(name.c_str(), cfg.gpu, cfg.fabric, id,
                                              vpod_of(cfg, g), cfg.pod.addr_mode, cfg.seed, pool_,
                                              events_, &invariants_, tap, cfg.pod.gpus));
    gpus_.back()->agent.set_series(&summary_.series());
    for (std::uint32_t p = 0; p < cfg.fabric.planes; ++p)
      fabric_->attach(gpus_.back()->port(p), id, p);
    nodes.push_back(gpus_.back().get());
    gpus_.back()->driver.driver().join(*hosts_.back());
  }
  if (comm_) {
    partition_ =
        std::make_unique<Partition>(*comm_, plan_, cfg_.fabric, *fabric_, pool_, net_, events_);
    // What bounds the windows: each GPU's and switch's own lookahead for its queues (those
    // named below it), the pod-wide one for the rest (docs/parallel.md, "Lookahead").
    events_.set_default_lookahead(partition_->lookahead());
    for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g)
      if (gpus_[g])
        events_.set_lookahead(std::string(gpus_[g]->name()) + ".", partition_->gpu_lookahead(g));
    for (std::uint32_t p = 0; p < fabric_->planes(); ++p)
      for (std::uint32_t i = 0; i < fabric_->plane(p).switches().size(); ++i)
        events_.set_lookahead(std::string(fabric_->plane(p).switches()[i]->name()) + ".",
                              partition_->switch_lookahead(p, i));
  }
  // GPUs other ranks simulate, where built, stay still here (their drivers' workers stop).
  for (std::uint32_t g = 0; g < cfg.pod.gpus; ++g)
    if (!owned_[g] && gpus_[g]) gpus_[g]->driver.driver().go_dormant();
  scenario_ =
      std::make_unique<ScenarioRunner>(cfg_, nodes, *fabric_, net_, owned_, &replay_, &host_);
  if (const CollectiveRun* c = scenario_->collective()) summary_.attach(c->stats());
  if (const ModelRun* m = scenario_->model()) summary_.attach(m->stats());
  spawn_thread("control", [this] { control(); });
}

Pod::~Pod() = default;

GpuNode& Pod::gpu(std::size_t i) {
  if (!gpus_.at(i))
    throw std::logic_error(
        fmt::format("Pod::gpu: gpu{} is simulated by another rank and not built on this one", i));
  return *gpus_[i];
}

std::vector<std::string> Pod::failures() const {
  // A direct setup's failures, then every rank's failed steps in the order they happened
  // (then by step).
  std::vector<std::string> out = scenario_->failures();
  const std::size_t setup = scenario_->setup_failures();
  std::vector<RankFailure> steps = rank_failures_;
  for (std::size_t i = setup; i < out.size(); ++i)
    steps.push_back({scenario_->failed_at()[i - setup].first,
                     scenario_->failed_at()[i - setup].second, out[i]});
  std::stable_sort(steps.begin(), steps.end(), [](const RankFailure& a, const RankFailure& b) {
    return a.at != b.at ? a.at < b.at : a.step < b.step;
  });
  out.resize(setup);
  for (auto& f : steps)
    out.push_back(std::move(f.what));
  out.insert(out.end(), own_failures_.begin(), own_failures_.end());
  return out;
}

// A GPU down after a reset is not settled: it comes back and may have work to do (with
// after_reset = announce, handshakes with its former importers).
bool Pod::local_settled() const {
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    if (owned_[g] && (gpus_[g]->down() || !gpus_[g]->driver.quiescent())) return false;
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
    teardown_begun_ = true;
    std::size_t exiting = 0;
    for (auto [gpu, process] : scenario_->processes()) {
      if (!owned_[gpu] || gpus_[gpu]->down()) continue;
      GpuNode& node = *gpus_[gpu];
      ++exiting;
      node.driver.start(node.driver.driver().process_exit(static_cast<driver::ProcessId>(process)),
                        std::function<void()>([&] { --exiting; }));
    }
    // Rounds: every `interval` from now, each rank says whether its processes have exited
    // and its drivers are idle; the pod hears every answer the host latency later and stops
    // when all are, or when revokes (up to release_timeout for releases, each send polling up
    // to writeback_timeout) have had time for a chain of both, and a host's bring-up call
    // whose caller was reset (each of 8 GPUs' PSP commands, then the firmware's READY poll)
    // for its end.
    const driver::DriverConfig& d = cfg_.gpu.driver;
    const Time start = sim_now();
    const Time bring_up = d.psp_latency * 16 + d.firmware_poll_interval *
                                                   static_cast<std::int64_t>(d.firmware_poll_limit);
    const Time limit =
        start + (d.release_timeout + d.writeback_timeout) * 3 + bring_up + Time::ms(1);
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
    collect_holdings();
    if (ranks_ == 1) {   // a split run's rank 0 judges once it has every rank's (gather_ranks)
      judge_holdings();  // its violations are counted with the others
      summary_.add_teardown(0, stale_imports_.size());
    }
  }
  finished_ = true;
  sc_core::sc_stop();
}

void Pod::collect_holdings() {
  held_at_ = sim_now();
  for (const auto& g : gpus_)
    if (g && owned_[g->id()] && !g->down())
      held_.push_back({g->id(), g->driver.driver().holdings()});
}

std::size_t Pod::judge_holdings() {
  const std::size_t before = invariants_.violations().size();
  std::sort(held_.begin(), held_.end(), [](const Held& a, const Held& b) { return a.gpu < b.gpu; });
  std::set<std::pair<std::uint64_t, AccelId>> granted;
  for (const Held& g : held_)
    granted.insert(g.h.grants.begin(), g.h.grants.end());
  for (Held& g : held_) {
    driver::Holdings& h = g.h;
    for (const driver::Holdings::Import& imp : h.held_imports) {
      const AccelId exporter = imp.handle.exporter();
      if (granted.count({imp.handle.lo, g.gpu}) || exporter == g.gpu || !imp.same_connection)
        continue;
      stale_imports_.push_back({g.gpu, exporter, imp.handle.lo});
      --h.imports;
      const auto d = std::find_if(h.details.begin(), h.details.end(),
                                  [&](const auto& line) { return line.bo == imp.bo; });
      if (imp.bo != 0 && d != h.details.end()) {
        h.details.erase(d);
        --h.buffers;
      }
    }
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
    std::string what = fmt::format("gpu{} still holds after teardown:", g.gpu);
    for (std::size_t i = 0; i < held.size(); ++i)
      what += (i ? ", " : " ") + held[i];
    for (const auto& line : h.details)
      what += "\n    " + line.text;
    invariants_.report(held_at_, what);
  }
  return invariants_.violations().size() - before;
}

void Pod::replay(const std::vector<TraceEntry>& trace) {
  replay_.assign(cfg_.pod.gpus, {});
  for (const TraceEntry& e : trace)
    replay_.at(e.gpu).push_back(e);
}

void Pod::set_timeline(Timeline* t) {
  for (auto& g : gpus_) {
    if (!g) continue;
    g->agent.set_timeline(t);
    g->driver.set_timeline(t);
  }
}

void Pod::record_accesses() {
  access_log_.assign(gpus_.size(), {});
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    if (gpus_[g]) gpus_[g]->agent.record_to(&access_log_[g]);
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
  const Time limit = cfg_.sim.stall_limit;
  next_stall_check_ = limit;
  if (partition_) {
    run_windows();
  } else if (!between && limit == Time{}) {
    events_.run_for(cfg_.sim.max_time);
  } else {
    // In slices, for `between`, and ending at the watchdog's looks (every half stall_limit,
    // the same simulated times however the run is sliced or split).
    if (!between) slice = cfg_.sim.max_time;
    while (sc_core::sc_get_status() != sc_core::SC_STOPPED && sim_now() < cfg_.sim.max_time) {
      Time to = std::min(cfg_.sim.max_time, sim_now() + std::min(slice, cfg_.sim.max_time));
      if (limit > Time{}) to = std::min(to, next_stall_check_);
      events_.run_for(to - sim_now());
      if (between) between();
      if (limit > Time{} && sim_now() >= next_stall_check_ && check_stuck()) break;
    }
  }
  finalize();
  host_.finish();
}

std::uint64_t Pod::accesses_completed() const {
  std::uint64_t n = 0;
  for (const auto& g : gpus_)
    if (g) n += g->agent.completed();
  return n;
}

void Pod::run_windows() {
  // Windows that end before anything a rank does in them can make something happen on another
  // rank, so every rank can simulate one on its own, then exchange (docs/parallel.md).
  const Time step = partition_->lookahead();
  const Time one = Time::ps(1);
  const Time max = cfg_.sim.max_time;
  Time end = step - one;  // nothing is due before the kernel starts
  // Every window runs, even one that ends where it starts (a 1 ps lookahead): the first starts
  // the kernel, before which nothing is pending, and the kernel may hold activity due at the
  // very end of the last one.
  for (;;) {
    end = std::min(end, max);
    if (cfg_.sim.stall_limit > Time{}) end = std::min(end, next_stall_check_);  // a look is due
    events_.run_for(end - sim_now());
    if (cfg_.sim.stall_limit > Time{} && sim_now() >= next_stall_check_ && check_stuck()) break;
    const bool stopped = sc_core::sc_get_status() == sc_core::SC_STOPPED;
    // The earliest effect on another rank of anything waiting here: queued items by their
    // queues' lookaheads; the SystemC kernel's next activity (a scenario step) by the pod's.
    Time effect = events_.next_effect();
    if (const Time kernel = events_.kernel_next(); kernel < Time::max() - step)
      effect = std::min(effect, kernel + step);
    const RankComm::Agreement a =
        partition_->exchange(stopped ? Time::max() : effect, stopped, host_.phase());
    if (a.stopped == ranks_) break;
    if (a.stopped != 0)
      throw std::logic_error(
          fmt::format("partitioned run: {} of {} ranks stopped at {}, the others did not",
                      a.stopped, ranks_, pretty(sim_now())));
    if (sim_now() >= max) break;
    // The next window ends just before the earliest effect anywhere (idle stretches are
    // skipped: it may lie far beyond this one).
    if (Time::ps(a.next) <= sim_now())
      throw std::logic_error(
          fmt::format("partitioned run: the next window would end at {}, "
                      "before its start at {}",
                      pretty(Time::ps(a.next) - one), pretty(sim_now())));
    end = a.next >= max.as_ps() ? max : Time::ps(a.next) - one;
  }
}

std::vector<std::string> Pod::stuck_queues(Time limit) const {
  std::vector<std::string> out;
  const Time now = sim_now();
  auto look = [&](const std::string& where, const Egress& e) {
    const Time since = e.waiting_since();
    if (since == Time::max() || now - since < limit) return;
    out.push_back(fmt::format("{}: {} packet(s) queued, none sent since {}: {}", where,
                              e.queued_packets(), pretty(since), e.why_waiting()));
  };
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    if (!owned_[g]) continue;
    for (const auto& port : gpus_[g]->ports)
      look(std::string(port->name()) + " (transmit)", port->egress());
  }
  for (std::uint32_t p = 0; p < fabric_->planes(); ++p)
    for (const auto& sw : fabric_->plane(p).switches())
      for (std::uint32_t o = 0; o < sw->outputs(); ++o)
        look(fmt::format("{} output {}", sw->name(), o), sw->output(o));
  return out;
}

bool Pod::check_stuck() {
  const Time limit = cfg_.sim.stall_limit;
  while (next_stall_check_ <= sim_now())
    next_stall_check_ += std::max(Time::ps(limit.as_ps() / 2), Time::ns(1));
  std::vector<std::string> mine = stuck_queues(limit);
  if (comm_ && ranks_ > 1) {
    if (comm_->or_all(mine.empty() ? 0 : 1) == 0) return false;
    ByteBuffer bytes;
    ByteWriter w(bytes);
    w.put(static_cast<std::uint64_t>(mine.size()));
    for (const auto& s : mine)
      w.str(s);
    const auto all = comm_->gather(bytes);
    mine.clear();
    for (const auto& from : all) {  // rank 0 only
      ByteReader r(from, "a rank's stuck queues");
      for (std::uint64_t n = r.get<std::uint64_t>(); n > 0; --n)
        mine.push_back(r.str());
    }
  } else if (mine.empty()) {
    return false;
  }
  stuck_ = true;
  if (!comm_ || comm_->rank() == 0) {
    std::string what = fmt::format(
        "stuck at {}: {} queue(s) held packets and sent none for sim.stall_limit ({}; raise "
        "it if such a wait is expected)",
        pretty(sim_now()), mine.size(), pretty(limit));
    for (std::size_t i = 0; i < mine.size() && i < 16; ++i)
      what += "\n  " + mine[i];
    if (mine.size() > 16) what += fmt::format("\n  and {} more", mine.size() - 16);
    own_failures_.push_back(std::move(what));
  }
  return true;
}

void Pod::finalize() {
  fabric_->finalize();
  if (!finished_) scenario_->record_unfinished();  // before a split run's ranks gather them
  if (!partition_) {
    summary_.gather(gpus_, invariants_);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  summary_.gather(gpus_, invariants_, comm_->or_all(PodSummary::paths_seen(gpus_)), &owned_);
  gather_ranks();
  gather_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::map<std::string, std::uint64_t> Pod::cache_digests() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& g : gpus_) {
    if (!g) continue;
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
    while (!local_settled()) {
      if (teardown_begun_) return;  // too late: what the drivers hold is being torn down
      sc_core::wait(to_sc(Time::us(1)));
    }
    if (teardown_begun_) return;
    digests->state_at = sim_now();
    digests->state = state_digests();
    done(*digests);
  });
}

std::map<std::string, std::uint64_t> Pod::state_digests() const {
  std::map<std::string, std::uint64_t> out;
  for (const auto& g : gpus_) {
    if (!g) continue;
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

// ---- a partitioned run's end ---------------------------------------------------------------

namespace {
// What each record of a rank's results at the end of a split run is.
constexpr std::uint8_t kSharedStat = 0, kComponentText = 1;

// Nothing recorded in it: merging it would change nothing.
bool recorded_nothing(const Stat& s) {
  switch (s.kind()) {
    case Stat::Kind::Counter: return s.as<Counter>()->value() == 0;
    case Stat::Kind::Series:
      for (std::uint64_t v : s.as<Series>()->values())
        if (v) return false;
      return true;
    case Stat::Kind::Distribution: return s.as<Distribution>()->histogram().count() == 0;
    case Stat::Kind::Breakdown: {
      const Breakdown& b = *s.as<Breakdown>();
      if (b.samples()) return false;
      for (std::uint64_t v : b.sums())
        if (v) return false;
      return true;
    }
    case Stat::Kind::Formula: return false;
  }
  return false;
}

}  // namespace

ByteBuffer Pod::pack_results() {
  ByteBuffer message;
  ByteWriter out(message);
  // In the order of the walk: the stats every rank adds to (links, whose ends count what each
  // sends; the summary of each rank's GPUs), by path; and the stats of each GPU and switch this
  // rank simulated, as the text rank 0 writes into stats.json for them (a direct setup, say,
  // ran on every rank: only this rank's copies count). Written straight into the message.
  {
    std::vector<std::uint64_t> words;
    std::uint64_t count = 0;
    message.reserve(std::size_t{64} << 20);
    const std::size_t count_at = message.size();
    out.put(count);  // filled in below
    walk_results(
        [&](const std::string& path, const Stat& s) {
          // A formula is evaluated on rank 0 from the merged stats.
          if (s.kind() == Stat::Kind::Formula || recorded_nothing(s)) return;
          words.clear();
          pack_stat(s, words);
          out.put(kSharedStat);
          out.str(path);
          out.put(static_cast<std::uint64_t>(words.size()));
          const auto* p = reinterpret_cast<const unsigned char*>(words.data());
          out.raw(p, words.size() * sizeof(std::uint64_t));
          ++count;
        },
        [&](const sc_core::sc_object& obj, std::string_view text) {
          out.put(kComponentText);
          out.str(obj.name());
          out.str(text);
          ++count;
        });
    std::memcpy(message.data() + count_at, &count, sizeof count);
  }
  {
    std::vector<std::uint64_t> words;
    summary_.pack_extras(words);
    out.put(static_cast<std::uint64_t>(words.size()));
    const auto* p = reinterpret_cast<const unsigned char*>(words.data());
    out.raw(p, words.size() * sizeof(std::uint64_t));
  }
  // The steps that failed here (a direct setup's failures happened alike on every rank).
  {
    const auto& fails = scenario_->failures();
    const std::size_t setup = scenario_->setup_failures();
    out.put(static_cast<std::uint64_t>(fails.size() - setup));
    for (std::size_t i = setup; i < fails.size(); ++i) {
      out.put(scenario_->failed_at()[i - setup].first.as_ps());
      out.put(static_cast<std::uint64_t>(scenario_->failed_at()[i - setup].second));
      out.str(fails[i]);
    }
  }
  out.put(static_cast<std::uint64_t>(invariants_.violations().size()));
  for (const Violation& v : invariants_.violations()) {
    out.put(v.at.as_ps());
    out.str(v.what);
  }
  std::uint64_t faulted = 0;
  for (std::size_t g = 0; g < gpus_.size(); ++g)
    faulted += owned_[g] && !gpus_[g]->gpuvm.fault_log().empty();
  out.put(faulted);
  for (std::size_t g = 0; g < gpus_.size(); ++g) {
    if (!owned_[g]) continue;
    const auto& log = gpus_[g]->gpuvm.fault_log();
    if (log.empty()) continue;
    out.put(static_cast<std::uint64_t>(g));
    out.put(static_cast<std::uint64_t>(log.size()));
    for (const FaultRecord& f : log) {
      out.put(f.at.as_ps());
      out.put(f.vmid);
      out.put(f.va);
      out.put(static_cast<std::uint8_t>(f.write));
    }
  }
  out.put(static_cast<std::uint64_t>(scenario_->records().size()));
  for (const StepRecord& r : scenario_->records()) {
    out.put(static_cast<std::uint64_t>(r.index));
    out.put(r.gpu);
    out.put(r.process);
    out.str(r.op);
    out.put(r.started.as_ps());
    out.put(r.ended.as_ps());
    out.str(r.result);
    out.put(r.retries);
  }
  // When the workload started (a rank with no process of its own never saw it).
  out.put(static_cast<std::uint8_t>(scenario_->workload_started()));
  out.put(scenario_->workload_start().as_ps());
  // What the collective's participants and the model trace's nodes did here.
  if (const CollectiveRun* c = std::as_const(*scenario_).collective()) c->pack(out);
  if (const ModelRun* m = std::as_const(*scenario_).model()) m->pack(out);
  // What this rank's drivers still held at teardown, for rank 0's judgement.
  out.put(held_at_.as_ps());
  out.put(static_cast<std::uint64_t>(held_.size()));
  for (const Held& g : held_) {
    const driver::Holdings& h = g.h;
    out.put(static_cast<std::uint32_t>(g.gpu));
    for (std::uint64_t n : {h.buffers, h.pins, h.npa_ranges, h.exports, h.revoking, h.imports,
                            h.handles, h.fds, h.waiters, h.busy_tasks})
      out.put(n);
    out.put(static_cast<std::uint64_t>(h.details.size()));
    for (const auto& d : h.details) {
      out.put(d.bo);
      out.str(d.text);
    }
    out.put(static_cast<std::uint64_t>(h.held_imports.size()));
    for (const auto& i : h.held_imports) {
      out.put(i.handle.lo);
      out.put(i.handle.hi);
      out.put(i.bo);
      out.put(static_cast<std::uint8_t>(i.same_connection));
    }
    out.put(static_cast<std::uint64_t>(h.grants.size()));
    for (const auto& [lo, importer] : h.grants) {
      out.put(lo);
      out.put(static_cast<std::uint32_t>(importer));
    }
  }
  return message;
}

void Pod::gather_ranks() {
  // Every rank but 0 packs what it simulated; rank 0 meanwhile writes its own GPUs' and
  // switches' stats.json text and indexes the stats every rank adds to by path, to merge the
  // others' into.
  const bool root = comm_->rank() == 0;
  std::unordered_map<std::string, const Stat*> shared;
  if (root)
    walk_results(
        [&](const std::string& path, const Stat& s) {
          if (!shared.emplace(path, &s).second)
            throw std::logic_error("partitioned run: two stats at " + path);
        },
        [&](const sc_core::sc_object& obj, std::string_view text) {
          blocks_.emplace(obj.name(), own_blocks_.emplace_back(text));
        });
  const ByteBuffer message = root ? ByteBuffer{} : pack_results();
  rank_results_ = comm_->gather(message);
  if (!root) return;
  for (std::uint32_t r = 1; r < rank_results_.size(); ++r) {
    ByteReader in(rank_results_[r], "partitioned run: another rank's results");
    const auto count = in.get<std::uint64_t>();
    std::vector<std::uint64_t> words;
    std::string path;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (in.get<std::uint8_t>() == kComponentText) {
        const std::string_view name = in.view();
        const std::string_view text = in.view();  // both point into rank_results_
        if (stat_owner(name) != r || !blocks_.emplace(name, text).second)
          throw std::runtime_error(fmt::format(
              "partitioned run: rank {} sent stats for {}, which it did not simulate or sent "
              "twice",
              r, name));
        continue;
      }
      path = in.view();
      const auto n = in.get<std::uint64_t>();
      words.resize(n);
      const unsigned char* at = in.take(n * sizeof(std::uint64_t));
      std::memcpy(words.data(), at, n * sizeof(std::uint64_t));
      const auto it = shared.find(path);
      if (it == shared.end())
        throw std::runtime_error(
            fmt::format("partitioned run: rank {} has a stat rank 0 does not: {}", r, path));
      merge_packed(*it->second, words.data(), words.data() + words.size());
    }
    const auto n = in.get<std::uint64_t>();
    words.resize(n);
    const unsigned char* at = in.take(n * sizeof(std::uint64_t));
    std::memcpy(words.data(), at, n * sizeof(std::uint64_t));
    summary_.merge_extras(words.data(), words.data() + words.size());
    const auto nf = in.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < nf; ++i) {
      RankFailure f;
      f.at = Time::ps(in.get<std::int64_t>());
      f.step = in.get<std::uint64_t>();
      f.what = in.str();
      rank_failures_.push_back(std::move(f));
    }
    const auto nv = in.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < nv; ++i) {
      const Time t = Time::ps(in.get<std::int64_t>());
      invariants_.report(t, in.str());
    }
    const auto ng = in.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < ng; ++i) {
      const auto g = in.get<std::uint64_t>();
      const auto nr = in.get<std::uint64_t>();
      auto& log = rank_faults_[g];
      for (std::uint64_t k = 0; k < nr; ++k) {
        FaultRecord f;
        f.at = Time::ps(in.get<std::int64_t>());
        f.vmid = in.get<std::uint16_t>();
        f.va = in.get<std::uint64_t>();
        f.write = in.get<std::uint8_t>() != 0;
        log.push_back(f);
      }
    }
    const auto ns = in.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < ns; ++i) {
      StepRecord s;
      s.index = in.get<std::uint64_t>();
      s.gpu = in.get<std::uint32_t>();
      s.process = in.get<std::uint32_t>();
      s.op = in.str();
      s.started = Time::ps(in.get<std::int64_t>());
      s.ended = Time::ps(in.get<std::int64_t>());
      s.result = in.str();
      s.retries = in.get<std::uint32_t>();
      rank_records_.push_back(std::move(s));
    }
    const bool started = in.get<std::uint8_t>() != 0;
    scenario_->merge_start(started, Time::ps(in.get<std::int64_t>()));
    if (CollectiveRun* c = scenario_->collective()) c->merge(in);
    if (ModelRun* m = scenario_->model()) m->merge(in);
    held_at_ = std::max(held_at_, Time::ps(in.get<std::int64_t>()));
    const auto nh = in.get<std::uint64_t>();
    for (std::uint64_t i = 0; i < nh; ++i) {
      Held g{static_cast<AccelId>(in.get<std::uint32_t>()), {}};
      driver::Holdings& h = g.h;
      for (std::uint64_t* n : {&h.buffers, &h.pins, &h.npa_ranges, &h.exports, &h.revoking,
                               &h.imports, &h.handles, &h.fds, &h.waiters, &h.busy_tasks})
        *n = in.get<std::uint64_t>();
      const auto nd = in.get<std::uint64_t>();
      for (std::uint64_t k = 0; k < nd; ++k) {
        const auto bo = in.get<std::uint64_t>();
        h.details.push_back({bo, in.str()});
      }
      const auto ni = in.get<std::uint64_t>();
      for (std::uint64_t k = 0; k < ni; ++k) {
        driver::Holdings::Import imp;
        imp.handle.lo = in.get<std::uint64_t>();
        imp.handle.hi = in.get<std::uint64_t>();
        imp.bo = in.get<std::uint64_t>();
        imp.same_connection = in.get<std::uint8_t>() != 0;
        h.held_imports.push_back(imp);
      }
      const auto ngr = in.get<std::uint64_t>();
      for (std::uint64_t k = 0; k < ngr; ++k) {
        const auto lo = in.get<std::uint64_t>();
        h.grants.emplace_back(lo, static_cast<AccelId>(in.get<std::uint32_t>()));
      }
      held_.push_back(std::move(g));
    }
  }
  const std::size_t found = judge_holdings();
  summary_.add_teardown(found, stale_imports_.size());
  invariants_.sort();
}

std::int64_t Pod::stat_owner(std::string_view path) const {
  // "pod.gpuN...." and "pod.fabric.planeP.{switch0,leafL,spineS}...."; no allocation (it is
  // asked for every stat of the pod).
  auto take = [&](std::string_view word) {
    if (path.substr(0, word.size()) != word) return false;
    path.remove_prefix(word.size());
    return true;
  };
  auto number = [&]() -> std::int64_t {
    std::int64_t v = 0;
    std::size_t n = 0;
    while (n < path.size() && path[n] >= '0' && path[n] <= '9' && n < 12)
      v = v * 10 + (path[n++] - '0');
    if (n == 0 || (n < path.size() && path[n] != '.')) return -1;
    path.remove_prefix(n < path.size() ? n + 1 : n);
    return v;
  };
  if (!take(name()) || !take(".")) return -1;
  if (take("gpu")) {
    const std::int64_t g = number();
    if (g < 0 || static_cast<std::size_t>(g) >= plan_.gpu.size()) return -1;
    return static_cast<std::int64_t>(plan_.gpu[g]);
  }
  if (!take("fabric.plane")) return -1;
  const std::int64_t p = number();
  if (p < 0 || static_cast<std::size_t>(p) >= plan_.switch_.size()) return -1;
  const std::vector<std::uint32_t>& sw = plan_.switch_[p];
  std::int64_t i = -1;
  if (take("switch") || take("leaf")) {
    i = number();
  } else if (take("spine")) {
    i = number();
    const std::uint32_t per_leaf = cfg_.fabric.leaf_spine.gpus_per_leaf;
    if (i >= 0) i += (cfg_.pod.gpus + per_leaf - 1) / per_leaf;  // spines follow the leaves
  }
  if (i < 0 || static_cast<std::size_t>(i) >= sw.size()) return -1;
  return static_cast<std::int64_t>(sw[i]);
}

void Pod::walk_results(
    const StatFn& shared,
    const std::function<void(const sc_core::sc_object&, std::string_view)>& mine) {
  const std::int64_t me = comm_->rank();
  std::string text;  // one component's at a time
  collect_stats(
      [&](const std::string& path, const Stat& s) {
        if (stat_owner(path) != -1)
          throw std::logic_error(fmt::format(
              "partitioned run: the stat {} lies outside its component's part of the tree", path));
        shared(path, s);
      },
      [&](const sc_core::sc_object& obj) {
        const std::int64_t owner = stat_owner(obj.name());
        if (owner < 0) return false;
        if (owner == me) {
          text.clear();
          stats_text_under(obj, text);
          mine(obj, text);
        }
        return true;
      });
}

StatSplice Pod::stat_splice() const {
  if (!partition_) return {};
  return [this](const sc_core::sc_object& obj) -> std::optional<std::string_view> {
    const std::int64_t owner = stat_owner(obj.name());
    if (owner < 0) return std::nullopt;
    const auto it = blocks_.find(obj.name());
    if (it == blocks_.end())
      throw std::runtime_error(
          fmt::format("partitioned run: rank {} sent no stats for {}", owner, obj.name()));
    return it->second;
  };
}

std::vector<StepRecord> Pod::step_records() const {
  std::vector<StepRecord> all = scenario_->records();
  all.insert(all.end(), rank_records_.begin(), rank_records_.end());
  std::stable_sort(all.begin(), all.end(),
                   [](const StepRecord& a, const StepRecord& b) { return a.index < b.index; });
  return all;
}

const std::vector<FaultRecord>& Pod::fault_log(std::size_t g) const {
  static const std::vector<FaultRecord> none;
  auto it = rank_faults_.find(g);
  if (it != rank_faults_.end()) return it->second;
  return gpus_.at(g) ? gpus_[g]->gpuvm.fault_log() : none;  // none: another rank's, none sent
}

}  // namespace podsim
