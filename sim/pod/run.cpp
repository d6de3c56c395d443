#include "sim/pod/run.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "sim/core/crash_guard.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/files.hpp"
#include "sim/core/json_write.hpp"
#include "sim/core/sanitizers.hpp"
#include "sim/core/timeline.hpp"
#include "sim/pod/collective_run.hpp"
#include "sim/pod/model_run.hpp"
#include "sim/pod/model_trace.hpp"
#include "sim/pod/partition.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/pod/stats_json.hpp"
#include "sim/pod/summary.hpp"
#include "sim/pod/tables.hpp"
#include "sim/pod/trace.hpp"
#include "sim/pod/warnings.hpp"
#include "sim/pod/workload_files.hpp"

#ifndef PODSIM_VERSION
#define PODSIM_VERSION "0.0.0"
#endif

namespace podsim {

const char* podsim_version() {
  return PODSIM_VERSION;
}

namespace {

namespace fs = std::filesystem;

}  // namespace

namespace {

class Progress {
 public:
  Progress(std::ostream& err, bool enabled, Time target)
      : err_(err), enabled_(enabled), target_(target), t0_(Clock::now()) {
    if (const char* ms = std::getenv("PODSIM_PROGRESS_AFTER_MS"))
      after_ = std::chrono::milliseconds(std::strtoll(ms, nullptr, 10));
  }
  bool enabled() const { return enabled_; }
  void update(Time now, std::uint64_t accesses) {
    const auto t = Clock::now();
    if (t - t0_ < after_ || t - last_ < std::chrono::milliseconds(250)) return;
    last_ = t;
    const double host = std::chrono::duration<double>(t - t0_).count();
    fmt::print(
        err_,
        "\r\033[Kpodsim: simulated {} of at most {} ({:.1f}%), {} accesses, {:.0f} per second",
        pretty(now), pretty(target_), 100.0 * now.as_seconds() / target_.as_seconds(), accesses,
        static_cast<double>(accesses) / host);
    err_.flush();
    shown_ = true;
  }
  void finish() {
    if (shown_) {
      err_ << "\r\033[K";
      err_.flush();
    }
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& err_;
  bool enabled_;
  Time target_;
  Clock::time_point t0_, last_{};
  Clock::duration after_ = std::chrono::seconds(2);
  bool shown_ = false;
};

}  // namespace

namespace {
// The files a run writes into its directory.
constexpr const char* kRunOutputs[] = {"run.json",
                                       "stats.json",
                                       "config.json",
                                       "latency.csv",
                                       "latency_histogram.csv",
                                       "breakdown.csv",
                                       "timeseries.csv",
                                       "collectives.csv",
                                       "collectives.json",
                                       "model.csv"};

std::uint64_t page_faults(const struct rusage& usage) {
  return static_cast<std::uint64_t>(usage.ru_minflt) + static_cast<std::uint64_t>(usage.ru_majflt);
}
std::uint64_t page_faults_so_far() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  return page_faults(usage);
}
// The most memory this program has held resident: the kernel's high-water mark of its address
// space (VmHWM), which starts afresh when the program starts. Not getrusage's ru_maxrss: Linux
// carries into it the resident size of the image a process replaced when it started, which
// for a run that podsim bench, sweep or a test started is a copy of that parent (a bench that
// had read a 1,024-GPU point's results reported 220 MiB for the next 8-GPU point, its own
// 35). ru_maxrss only where /proc cannot say.
std::uint64_t peak_rss_bytes(const struct rusage& usage) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmHWM:")) return std::strtoull(line.c_str() + 6, nullptr, 10) * 1024;
  return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
}
}  // namespace

int run_command(const RunOptions& opt, std::ostream& out, std::ostream& err) {
  // The run's page faults are counted from here (not the program's start, nor a first image's
  // before restart_with_huge_heap).
  const std::uint64_t faults_at_start = page_faults_so_far();
  // Split across ranks: rank 0 alone writes and prints.
  RankComm* const ranks = opt.ranks && opt.ranks->ranks() > 1 ? opt.ranks : nullptr;
  const bool writer = !ranks || ranks->rank() == 0;

  // 1. The config: everything is checked before anything is built or written. Each check gives
  // its exit code; a split run's ranks then agree, so that a rank refusing alone (given another
  // command line, or reading other files) ends every rank rather than leaving them waiting.
  PodConfig cfg;
  std::vector<TraceEntry> replay;                       // a trace to replay, read and checked
  std::vector<std::pair<const char*, fs::path>> extra;  // --access-log, --trace, --state-digest
  std::ostringstream why;  // what a refusal says (a split run's rank 0 prints the others')
  const int checked = [&]() -> int {
    try {
      cfg = load_pod_config(opt.config_path, opt.overrides);
    } catch (const config::ConfigError& e) {
      fmt::print(why, "podsim: config error: {}\n", e.what());
      return 2;
    }
    if (opt.seed) cfg.seed = *opt.seed;

    if (ranks) {
      const char* refused = opt.timeline       ? "--trace"
                            : opt.access_log   ? "--access-log"
                            : opt.state_digest ? "--state-digest"
                                               : nullptr;
      if (refused) {
        fmt::print(why, "podsim: {} is not available when the pod is split across ranks\n",
                   refused);
        return 2;
      }
    }

    try {
      replay = resolve_workload_files(cfg, opt.config_path, opt.overrides);
    } catch (const std::invalid_argument& e) {
      fmt::print(why, "podsim: {}\n", e.what());
      return 2;
    }

    // The files asked for beside the directory's (--access-log, --trace, --state-digest): none
    // may be one of the run's own outputs or another's, nor may any output be a file the run
    // reads (its config, its traces); and each must be writable. All found before anything is
    // written. (A split run refuses them, above.)
    if (opt.access_log) extra.emplace_back("--access-log", *opt.access_log);
    if (opt.timeline) extra.emplace_back("--trace", *opt.timeline);
    if (opt.state_digest) extra.emplace_back("--state-digest", *opt.state_digest);
    {
      std::error_code ec;
      std::vector<std::pair<std::string, fs::path>> inputs, taken;
      if (opt.config_path)
        inputs.emplace_back(fmt::format("the config file {}", *opt.config_path),
                            fs::weakly_canonical(*opt.config_path, ec));
      for (const std::string* in :
           {&cfg.workload.traffic.trace, &cfg.workload.model, &cfg.workload.model_groups})
        if (!in->empty())
          inputs.emplace_back(fmt::format("the input file {}", *in), fs::weakly_canonical(*in, ec));
      const fs::path out_dir = fs::weakly_canonical(opt.out_dir, ec);
      for (const char* f : kRunOutputs) {
        const fs::path out = out_dir / f;
        for (const auto& [what, in] : inputs)
          if (out == in) {
            fmt::print(why, "podsim: the run's {} (in {}) would overwrite {}: give another --out\n",
                       f, opt.out_dir, what);
            return 2;
          }
        taken.emplace_back(fmt::format("the run's {}", f), out);
      }
      taken.insert(taken.end(), inputs.begin(), inputs.end());
      for (const auto& [option, path] : extra) {
        const fs::path full = fs::weakly_canonical(path, ec);
        for (const auto& [what, other] : taken)
          if (full == other) {
            fmt::print(why, "podsim: {} {} would overwrite {}\n", option, path.string(), what);
            return 2;
          }
        taken.emplace_back(fmt::format("{}'s file", option), full);
        if (fs::is_directory(path, ec)) {
          fmt::print(why, "podsim: {} {}: is a directory\n", option, path.string());
          return 2;
        }
      }
      // The output directory and its parents are made before anything is written: a file there
      // (however the two paths are spelt) needs no probe now.
      auto plain = [](const fs::path& p) {  // absolute, no "." or "..", no trailing slash
        fs::path a = fs::absolute(p).lexically_normal();
        return a.has_filename() ? a : a.parent_path();
      };
      const fs::path made = plain(opt.out_dir);
      for (const auto& [option, path] : extra) {
        // Writable: its temporary file (what write_file renames into place) can be made; or,
        // where something other than a regular file is there (a symlink, a device, a FIFO:
        // written through), it may be written.
        const auto kind = fs::symlink_status(path, ec).type();
        if (kind != fs::file_type::not_found && kind != fs::file_type::regular) {
          if (::access(path.c_str(), W_OK) != 0) {
            fmt::print(why, "podsim: {} {}: cannot write there: {}\n", option, path.string(),
                       std::strerror(errno));
            return 2;
          }
          continue;
        }
        const fs::path parent = plain(path).parent_path();
        if (!fs::exists(parent, ec) &&
            std::mismatch(parent.begin(), parent.end(), made.begin(), made.end()).first ==
                parent.end())
          continue;
        const fs::path probe = fs::path(path.string() + ".tmp");
        const bool existed = fs::exists(probe, ec);
        if (!std::ofstream(probe, std::ios::app)) {
          fmt::print(why, "podsim: {} {}: cannot write there (cannot create {}: {})\n", option,
                     path.string(), probe.string(), std::strerror(errno));
          return 2;
        }
        if (!existed) fs::remove(probe, ec);
      }
    }

    return 0;
  }();
  err << why.str();
  if (ranks) {
    // A bit per rank that refused (the 64th for every rank from 63 on).
    const std::uint64_t refused =
        ranks->or_all(checked ? 1ull << std::min<std::uint32_t>(ranks->rank(), 63) : 0);
    if (refused != 0) {
      // Rank 0 prints what each other rank that refused said (they are silenced), once for
      // each different message that rank 0 did not print itself.
      const std::string mine = why.str();
      const std::vector<ByteBuffer> said =
          ranks->gather(checked ? ByteBuffer(mine.begin(), mine.end()) : ByteBuffer());
      if (writer) {
        std::vector<std::string> which;
        for (std::uint32_t r = 1; r < 64; ++r)
          if (refused >> r & 1) which.push_back(r < 63 ? std::to_string(r) : "63 and up");
        if (!checked)
          fmt::print(err,
                     "podsim: rank{} {} of {} refused the run where rank 0 did not (another "
                     "command line, config or files): every rank must run the same command "
                     "with the same files\n",
                     which.size() > 1 ? "s" : "", fmt::join(which, ", "), ranks->ranks());
        std::vector<std::string> printed{mine};
        for (std::uint32_t r = 1; r < said.size(); ++r) {
          std::string text(said[r].begin(), said[r].end());
          if (text.empty() || std::find(printed.begin(), printed.end(), text) != printed.end())
            continue;
          printed.push_back(text);
          while (!text.empty() && text.back() == '\n')
            text.pop_back();
          fmt::print(err, "podsim: rank {} said: {}\n", r, text);
        }
      }
      return checked ? checked : 2;
    }
  } else if (checked) {
    return checked;
  }

  // Every rank must simulate the same pod. mpirun starts each rank with its own command line
  // (an MPMD launch can give them different ones) and each reads its own files (a config or
  // trace that differs between hosts): the resolved config and the traces' bytes are compared
  // with rank 0's before anything is built or written.
  if (ranks) {
    PodConfig paths_aside = cfg;  // where a trace is may differ by host; what it holds may not
    Digest d;
    auto add_file = [&](const std::string& path) {
      std::ifstream in(path, std::ios::binary);
      d.add(std::string(std::istreambuf_iterator<char>(in), {}));
    };
    for (std::string* path : {&paths_aside.workload.traffic.trace, &paths_aside.workload.model,
                              &paths_aside.workload.model_groups}) {
      if (path->empty()) continue;
      if (fs::is_regular_file(*path)) {
        add_file(*path);
      } else {  // a Chakra trace's prefix: PREFIX.0.et, PREFIX.1.et, ...
        for (std::size_t n = 0; fs::is_regular_file(fmt::format("{}.{}.et", *path, n)); ++n)
          add_file(fmt::format("{}.{}.et", *path, n));
      }
      path->clear();
    }
    d.add(boost::json::serialize(write_pod_config(paths_aside)));
    d.add(opt.warnings_as_errors ? 1 : 0);  // the exit code of a run with warnings
    const std::uint64_t value = d.value();
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    const std::vector<ByteBuffer> all = ranks->gather(ByteBuffer(bytes, bytes + sizeof value));
    std::vector<std::uint32_t> differ;
    for (std::uint32_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0]) differ.push_back(r);
    if (ranks->or_all(differ.empty() ? 0 : 1) != 0) {
      if (writer)
        fmt::print(err,
                   "podsim: rank{} {} of {} resolved another config than rank 0 (or read other "
                   "trace files): every rank must run the same command with the same files\n",
                   differ.size() > 1 ? "s" : "", fmt::join(differ, ", "), ranks->ranks());
      return 2;
    }
  }

  // 2. Build. (sc_stop's "simulation stopped by user" is not news.) A pod that cannot be
  // split as asked is refused alike on every rank, before anything is written.
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Pod> built;
  // A build that fails otherwise (out of memory, even where SystemC crashes on it) leaves no
  // earlier run's outputs behind to pass for this one's.
  std::vector<std::string> earlier;
  if (writer) {
    for (const char* f : kRunOutputs)
      earlier.push_back((fs::path(opt.out_dir) / f).string());
    // stats.json is written over seconds, through its temporary file (OutputFile).
    earlier.push_back((fs::path(opt.out_dir) / "stats.json.tmp").string());
  }
  remove_on_crash(earlier);
  try {
    built = std::make_unique<Pod>("pod", cfg, nullptr, ranks);
  } catch (const PartitionError& e) {
    remove_on_crash({});
    fmt::print(err, "podsim: cannot split the pod across {} ranks: {}\n", ranks->ranks(), e.what());
    return 2;
  } catch (...) {
    for (const std::string& f : earlier)
      remove_if_regular(f);
    throw;
  }
  Pod& pod = *built;
  // The pod is not taken apart when the run ends: run_command runs once in a process, which
  // exits next, and freeing the 1,024-GPU pod's millions of small objects one by one took
  // ~0.5 s. AddressSanitizer builds free it, so that LeakSanitizer still checks what remains.
  struct LeftForExit {
    std::unique_ptr<Pod>& pod;
    ~LeftForExit() {
      if (!PODSIM_ASAN) (void)pod.release();
    }
  } left_for_exit{built};

  // 3. The output directory (rank 0's; every rank hears whether it could be made).
  const fs::path out_dir(opt.out_dir);
  std::error_code ec;
  bool no_dir = false;
  if (writer) {
    fs::create_directories(out_dir, ec);
    if (ec) {
      fmt::print(err, "podsim: cannot create the output directory {}: {}\n", out_dir.string(),
                 ec.message());
      no_dir = true;
    } else {
      // What an earlier run left goes first: a directory without run.json is a run that did
      // not finish (a killed process, a failed rank), never an old result passing as new.
      for (const char* f : kRunOutputs) {
        fs::remove(out_dir / f, ec);
        fs::remove(out_dir / (std::string(f) + ".tmp"), ec);  // a killed run's, half-written
      }
      fs::remove(out_dir / "report.html", ec);  // drawn from the earlier run's results
      // So do the files asked for beside them (an earlier run's access log or timeline would
      // pass for this one's if this one is stopped); written through, a device or FIFO stays.
      for (const auto& [option, path] : extra) {
        remove_if_regular(path);
        remove_if_regular(path.string() + ".tmp");
      }
    }
  }
  if (ranks) no_dir = ranks->or_all(no_dir ? 1 : 0) != 0;
  if (no_dir) return 2;
  // 4. Run.
  if (!replay.empty()) pod.replay(replay);
  if (opt.access_log) pod.record_accesses();
  boost::json::object digest_doc;  // stays empty unless the setup settles in an access phase
  if (opt.state_digest)
    pod.record_setup_digests([&](const Pod::SetupDigests& s) {
      auto hex = [](const std::map<std::string, std::uint64_t>& m) {
        boost::json::object o;
        for (const auto& [part, value] : m)
          o[part] = fmt::format("{:016x}", value);
        return o;
      };
      digest_doc["caches_at_ns"] = s.caches_at.as_ns();
      digest_doc["caches"] = hex(s.caches);
      digest_doc["state_at_ns"] = s.state_at.as_ns();
      digest_doc["state"] = hex(s.state);
    });
  std::unique_ptr<Timeline> timeline;
  if (opt.timeline) {
    timeline = std::make_unique<Timeline>(
        Timeline::Options{opt.timeline_sample, opt.timeline_max_access_events});
    pod.set_timeline(timeline.get());
  }
  // A progress line on stderr for runs longer than about two seconds, when stderr is a
  // terminal and the run is not --quiet.
  Progress progress(err, !opt.quiet && !ranks && ::isatty(2), cfg.sim.max_time);
  if (progress.enabled())
    pod.run([&] { progress.update(sim_now(), pod.accesses_completed()); });
  else
    pod.run();
  progress.finish();
  const double host_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Each rank's share of the work, for run.json (rank 0 gets them all).
  boost::json::array per_rank;
  if (ranks) {
    const Partition& part = *pod.partition();
    const KernelCounters k = pod.events().counters();
    const PartitionCounters& c = part.counters();
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    static_assert(std::tuple_size_v<decltype(c.by_phase)> == HostPhases::kPhases);
    std::vector<std::uint64_t> mine = {k.serves,
                                       c.windows,
                                       c.packets_sent,
                                       c.credits_sent,
                                       c.notes_sent,
                                       c.messages_sent,
                                       c.bytes_sent,
                                       static_cast<std::uint64_t>(host_s * 1e9),
                                       static_cast<std::uint64_t>(pod.gather_seconds() * 1e9),
                                       c.sync_ns,
                                       pod.gpus_built(),
                                       peak_rss_bytes(usage),
                                       pod.pool().peak_in_use()};
    const std::size_t by_phase = mine.size();  // then windows and sync_ns per host phase
    for (const PartitionCounters::ByPhase& b : c.by_phase) {
      mine.push_back(b.windows);
      mine.push_back(b.sync_ns);
    }
    const auto* p = reinterpret_cast<const unsigned char*>(mine.data());
    const auto all = ranks->gather(ByteBuffer(p, p + mine.size() * 8));
    for (std::size_t r = 0; r < all.size(); ++r) {
      std::vector<std::uint64_t> v(all[r].size() / 8);
      std::memcpy(v.data(), all[r].data(), v.size() * 8);
      if (v.size() != mine.size()) throw std::runtime_error("rank figures cut short");
      boost::json::object o;
      o["rank"] = r;
      o["gpus_built"] = v[10];
      o["serves"] = v[0];
      o["windows"] = v[1];
      o["packets_sent"] = v[2];
      o["credits_sent"] = v[3];
      o["notes_sent"] = v[4];
      o["messages_sent"] = v[5];
      o["bytes_sent"] = v[6];
      o["host_seconds"] = static_cast<double>(v[7]) / 1e9;
      o["gather_seconds"] = static_cast<double>(v[8]) / 1e9;
      o["sync_seconds"] = static_cast<double>(v[9]) / 1e9;
      o["peak_rss_bytes"] = v[11];  // by the end of the run (rank 0's outputs come later)
      // The most packets it held at once: its GPUs' accesses, and copies of those that came
      // from other ranks (kernel.packets_peak is rank 0's).
      o["packets_peak"] = v[12];
      // Where the windows fell: the host phase this rank was in as each one's exchange began.
      boost::json::object phases;
      for (std::size_t i = 0; i < HostPhases::kPhases; ++i)
        phases[HostPhases::kNames[i]] = {
            {"windows", v[by_phase + 2 * i]},
            {"sync_seconds", static_cast<double>(v[by_phase + 2 * i + 1]) / 1e9}};
      o["phases"] = std::move(phases);
      per_rank.push_back(std::move(o));
    }
    if (!writer) return 0;  // rank 0 reports for every rank
  }

  // 5. Results: the resolved config, the run's identity, every stat.
  boost::json::object run;
  run["podsim_version"] = podsim_version();
  run["seed"] = cfg.seed;
  run["config_source"] = opt.config_path ? *opt.config_path : "<embedded default pod>";
  boost::json::array sets;
  for (const auto& s : opt.overrides)
    sets.push_back(boost::json::string(s));
  run["overrides"] = std::move(sets);
  run["simulated_time_ns"] = sim_now().as_ns();
  run["host_seconds"] = host_s;
  if (ranks) {
    boost::json::object part;
    part["ranks"] = ranks->ranks();
    part["lookahead_ns"] = pod.partition()->lookahead().as_ns();
    part["gpu_lookahead_ns"] = pod.partition()->least_gpu_lookahead().as_ns();
    part["switch_lookahead_ns"] = pod.partition()->least_switch_lookahead().as_ns();
    part["cut_links"] = pod.partition()->cut_links();
    part["per_rank"] = std::move(per_rank);
    run["partition"] = std::move(part);
  }
  {
    // Where the host time went, and the kernel's work (deterministic counts) in the access
    // phases: what `podsim bench` reads.
    const HostPhases& h = pod.host();
    boost::json::object host;
    host["setup_seconds"] = h.setup_seconds();
    host["access_seconds"] = h.access_seconds();
    host["teardown_seconds"] = h.teardown_seconds();
    host["peak_rss_bytes"] = 0;  // measured last, below, once every other output is written
    host["page_faults"] = 0;     // the same
    // How much of the process was on huge pages as the first access phase began.
    host["huge_page_bytes"] = h.huge_pages().on_huge;
    // Whether malloc was asked to put the heap on huge pages as it grew, and whether the run
    // was started again for it (restart_with_huge_heap); page_faults shows what it got.
    host["huge_heap_asked"] = huge_heap_asked();
    host["restarted_for_huge_heap"] = restarted_for_huge_heap();
    run["host"] = std::move(host);
    const KernelCounters all = pod.events().counters();
    const KernelCounters& in = h.in_access_phases();
    boost::json::object kernel;
    kernel["serves"] = all.serves;
    kernel["activations"] = all.activations;
    kernel["notifications"] = all.notifications;
    kernel["access_phase_serves"] = in.serves;
    kernel["access_phase_activations"] = in.activations;
    kernel["access_phase_notifications"] = in.notifications;
    // The most packets held at once (this rank's, in a split run): every access in flight, every
    // control message on its way, holds one.
    kernel["packets_peak"] = pod.pool().peak_in_use();
    run["kernel"] = std::move(kernel);
  }
  // The phases in simulated time (host time: "host" above), and the measured window.
  const PodSummary& sum = pod.summary();
  {
    boost::json::object phases;
    // No access phase: the whole run is setup (and teardown, not told apart).
    phases["setup_ns"] = sum.access_end() > Time{} ? sum.access_start().as_ns() : sim_now().as_ns();
    phases["access_ns"] = sum.access_phase().as_ns();
    phases["teardown_ns"] =
        sum.access_end() > Time{} ? (sim_now() - sum.access_end()).as_ns() : 0.0;
    run["phases"] = std::move(phases);
    boost::json::object w;
    w["warmup_ns"] = cfg.workload.traffic.warmup.as_ns();
    w["warmup_accesses_per_gpu"] = cfg.workload.traffic.warmup_accesses;
    w["start_ns"] = sum.window().any ? sum.window().start.as_ns() : 0.0;
    w["length_ns"] = sum.window().length().as_ns();
    w["measured_accesses"] = sum.measured_accesses();
    w["warmup_accesses"] = sum.warmup_accesses();
    run["measured_window"] = std::move(w);
  }
  const std::vector<RunWarning> warnings = run_warnings(pod, opt.overrides);
  {
    boost::json::array ws;
    for (const RunWarning& w : warnings) {
      boost::json::object o;
      o["code"] = w.code;
      o["message"] = w.text;
      ws.push_back(std::move(o));
    }
    run["warnings"] = std::move(ws);
  }
  run["finished"] = pod.finished();
  boost::json::array failures;
  for (const auto& f : pod.failures())
    failures.push_back(boost::json::string(f));
  run["failures"] = std::move(failures);
  boost::json::array violations;
  for (const auto& v : pod.invariants().violations()) {
    boost::json::object o;
    o["at_ns"] = v.at.as_ns();
    o["what"] = v.what;
    violations.push_back(std::move(o));
  }
  run["invariant_violations"] = std::move(violations);
  boost::json::array stale;  // imports whose exporters forgot them (Pod::StaleImport)
  for (const auto& i : pod.stale_imports()) {
    boost::json::object o;
    o["importer"] = i.importer;
    o["exporter"] = i.exporter;
    o["handle_lo"] = fmt::format("{:016x}", i.handle_lo);
    stale.push_back(std::move(o));
  }
  run["stale_imports"] = std::move(stale);
  boost::json::array faults;  // each GPU's first faults, with address and time
  for (std::size_t g = 0; g < pod.gpu_count(); ++g)
    for (const FaultRecord& f : pod.fault_log(g)) {
      boost::json::object o;
      o["gpu"] = g;
      o["vmid"] = f.vmid;
      o["va"] = fmt::format("{:#x}", f.va);
      o["write"] = f.write;
      o["at_ns"] = f.at.as_ns();
      faults.push_back(std::move(o));
    }
  run["faults"] = std::move(faults);
  // The pod's bring-up ends here; steps' `at` count from it.
  run["workload_start_ns"] = pod.scenario().workload_start().as_ns();
  // Every step of a scenario; for the generated all_to_all, how many there were (its steps
  // are not made into JSON only to be counted: 37,888 on the 1,024-GPU pod).
  const bool every_step = cfg.workload.kind == WorkloadKind::Scenario;
  boost::json::array steps, unfinished;
  std::size_t step_count = 0;
  for (const StepRecord& r : pod.step_records()) {
    ++step_count;
    if (!every_step && !r.unfinished()) continue;
    boost::json::object o;
    o["step"] = r.index;
    o["gpu"] = r.gpu;
    o["process"] = r.process;
    o["op"] = r.op;
    o["started_ns"] = r.started.as_ns();
    o["ended_ns"] = r.ended.as_ns();
    o["result"] = r.result;
    if (r.retries) o["retries"] = r.retries;
    if (r.unfinished()) unfinished.push_back(o);
    if (every_step) steps.push_back(std::move(o));
  }
  // The steps still under way when the run ended unfinished (sim.max_time, the watchdog),
  // whatever the workload.
  run["unfinished_steps"] = std::move(unfinished);
  if (every_step)
    run["steps"] = std::move(steps);
  else
    run["steps"] = step_count;

  // stats.json, streamed: on the 1,024-GPU pod it holds ~180 K stats (36 MB), written to the
  // file a megabyte at a time as the stats are visited.
  auto write_stats_json = [&](OutputFile& file) {
    constexpr std::size_t kPiece = std::size_t{1} << 20;
    std::string text;
    text.reserve(kPiece + 4096);
    config::PrettyJson w(text);
    w.drain_every(kPiece, [&](std::string& t) {
      file.write(t);
      t.clear();
    });
    w.begin_object();
    w.member("podsim_version", podsim_version());
    w.member("config_name", cfg.name);
    w.member("seed", cfg.seed);
    w.member("simulated_time_ns", sim_now().as_ns());
    // Whether these are the results of a run that completed as configured (run.json says why
    // not): a tool reading stats.json alone can tell.
    w.member("ok", pod.ok());
    w.key("stats");
    w.begin_object();
    write_stats(w, pod.stat_splice());
    w.end_object();
    w.end_object();
    text += '\n';
    file.write(text);
  };

  // A failed run's CSVs begin with a line saying so, before the header: a tool that reads
  // them as a table of results trips over it instead of taking them for the configured run's.
  // The JSON outputs (state digest, timeline) carry the same words as "run_failed".
  std::string failed_text, failed_mark;
  if (!pod.ok()) {
    failed_text = fmt::format(
        "this run FAILED (finished: {}, {} failure(s), {} invariant violation(s): see "
        "run.json); these rows are not the results of the run as configured",
        pod.finished() ? "yes" : "no", pod.failures().size(), pod.invariants().violations().size());
    failed_mark = fmt::format("{}{}\n", kFailedCsvMark, failed_text);
  }
  // What this run has written so far: if writing the rest fails (a full disk, or no memory
  // left to format it), they go too, so that nothing half-written looks like a result.
  std::vector<fs::path> written;
  auto put = [&](const fs::path& path, std::string_view bytes) {
    written.push_back(path);
    write_file(path, bytes);
  };
  auto remove_written = [&] {
    for (const fs::path& p : written)
      remove_if_regular(p);
  };
  try {
    put(out_dir / "config.json", config::to_pretty_json(write_pod_config(cfg)));
    {
      const fs::path path = out_dir / "stats.json";
      written.push_back(path);
      OutputFile file(path);
      write_stats_json(file);
      file.commit();
    }
    put(out_dir / "latency.csv", failed_mark + latency_csv(pod.summary().latency_paths()));
    put(out_dir / "latency_histogram.csv",
        failed_mark + latency_histogram_csv(pod.summary().latency_paths()));
    // With a warm-up, the measured window's breakdown, the whole run's beside it.
    put(out_dir / "breakdown.csv",
        failed_mark + (pod.summary().windowed() ? breakdown_csv(pod.summary().measured_breakdown(),
                                                                &pod.summary().remote_breakdown())
                                                : breakdown_csv(pod.summary().remote_breakdown())));
    put(out_dir / "timeseries.csv", failed_mark + timeseries_csv(pod.summary().series()));
    if (const CollectiveRun* c = pod.scenario().collective()) {
      put(out_dir / "collectives.csv", failed_mark + c->csv());
      put(out_dir / "collectives.json", c->json(failed_text));
    }
    if (const ModelRun* m = pod.scenario().model())
      put(out_dir / "model.csv", failed_mark + m->csv());
    if (opt.access_log) put(*opt.access_log, failed_mark + format_trace(pod.access_log()));
    if (!failed_text.empty()) digest_doc["run_failed"] = failed_text;
    // Not taken in a run that went well: no file (said below); a failed run's says it failed.
    if (opt.state_digest && (digest_doc.contains("state") || !failed_text.empty()))
      put(*opt.state_digest, config::to_pretty_json(digest_doc));
    if (timeline) {
      for (const StepRecord& r : pod.scenario().records())
        timeline->span(r.gpu, Timeline::Process + r.process, r.op, r.started, r.ended,
                       fmt::format(R"({{"step": {}, "result": "{}"}})", r.index, r.result));
      // A collective's calls, each from its barrier passed to its program done.
      if (const CollectiveRun* c = pod.scenario().collective())
        for (const CollectiveRun::CallRecord& k : c->call_records()) {
          const std::uint64_t bytes = c->shapes()[k.size].bytes;
          const bool timed = k.call >= c->calls_per_size() - cfg.workload.collective.iterations;
          timeline->span(k.gpu, Timeline::Collective,
                         fmt::format("{} {} call {}{}", c->op_name(), to_string(Bytes(bytes)),
                                     k.call + 1, timed ? "" : " (warm-up)"),
                         k.start, k.end,
                         fmt::format(R"({{"bytes": {}, "call": {}, "timed": {}}})", bytes,
                                     k.call + 1, timed ? "true" : "false"));
        }
      put(*opt.timeline, timeline->to_json(cfg.pod.gpus, failed_text));
      if (timeline->dropped_accesses() && !opt.quiet)
        fmt::print(err,
                   "podsim: the timeline kept {} sampled-access events (--trace-max-events); "
                   "{} more sampled accesses were left out\n",
                   timeline->access_events(), timeline->dropped_accesses());
    }
    // The process's peak memory, with everything else written (the timeline's JSON can be
    // the largest thing a run holds).
    struct rusage usage {};
    ::getrusage(RUSAGE_SELF, &usage);
    run["host"].as_object()["peak_rss_bytes"] = peak_rss_bytes(usage);
    // And the run's page faults, from reading its config to here: first touches of fresh
    // memory (4 KiB each, or 2 MiB on huge pages) and of the program's own pages.
    run["host"].as_object()["page_faults"] = page_faults(usage) - faults_at_start;
    put(out_dir / "run.json", config::to_pretty_json(run));
    remove_on_crash({});  // complete: nothing to take back from here on
  } catch (const std::bad_alloc&) {
    remove_written();
    throw;  // said as running out of host memory, by the command line
  } catch (const std::exception& e) {
    remove_written();
    fmt::print(err, "podsim: {}; none of the run's outputs were kept\n", e.what());
    return 1;
  }

  if (!opt.quiet) {
    std::vector<std::string> files;
    for (const fs::path& p : written)
      files.push_back(p.parent_path() == out_dir ? p.filename().string() : p.string());
    print_summary(pod,
                  HostTiming{host_s, pod.host().setup_seconds(), pod.host().access_seconds(),
                             pod.host().teardown_seconds()},
                  out_dir.string(), files, warnings, out);
  }

  for (const auto& f : pod.failures())
    fmt::print(err, "podsim: workload failed: {}\n", f);
  for (const auto& v : pod.invariants().violations())
    fmt::print(err, "podsim: invariant violated at {}: {}\n", pretty(v.at), v.what);
  if (!pod.finished() && pod.failures().empty()) {
    // What was still under way, by name.
    std::string running;
    std::size_t n = 0;
    for (const StepRecord& r : pod.step_records())
      if (r.unfinished() && ++n <= 8)
        running += fmt::format("{}step {} ({} on gpu{} process {}, {} {})",
                               running.empty() ? "" : ", ", r.index, r.op, r.gpu, r.process,
                               r.result == "UNFINISHED" ? "under way since" : "waiting since",
                               pretty(r.started));
    fmt::print(
        err, "podsim: the workload had not finished at sim.max_time ({}){}\n",
        to_string(cfg.sim.max_time),
        n ? fmt::format(": {}{} not done", running, n > 8 ? fmt::format(" and {} more", n - 8) : "")
          : "");
  }
  if (!pod.ok()) return 1;
  if (opt.state_digest && !digest_doc.contains("state")) {
    // Asked for and not taken: no file (an earlier run's there goes too), rather than one
    // that compares equal to another's.
    remove_if_regular(*opt.state_digest);
    fmt::print(
        err,
        "podsim: --state-digest: no digest written to {}: {}; give the access phase more "
        "accesses (workload.traffic.accesses) so that the setup settles inside it\n",
        *opt.state_digest,
        pod.summary().access_end() > Time{}
            ? fmt::format("the drivers were still finishing the setup when the access "
                          "phase ({} to {}) ended",
                          pretty(pod.summary().access_start()), pretty(pod.summary().access_end()))
            : std::string("no access phase ended"));
    return 1;
  }
  if (opt.warnings_as_errors && !warnings.empty()) {
    std::string codes;
    for (const RunWarning& w : warnings)
      codes += (codes.empty() ? "" : ", ") + w.code;
    fmt::print(err, "podsim: {} warning(s), and warnings are errors (--warnings-as-errors): {}\n",
               warnings.size(), codes);
    if (opt.quiet)
      for (const RunWarning& w : warnings)
        fmt::print(err, "podsim: warning ({}): {}\n", w.code, w.text);
    return 3;
  }
  return 0;
}

}  // namespace podsim
