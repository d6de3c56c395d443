#include "sim/tools/bench.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <optional>
#include <sstream>

#include "sim/core/config_io.hpp"
#include "sim/core/files.hpp"
#include "sim/core/json_write.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/tools/process_pool.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Point {
  std::string name;
  std::optional<std::string> config;  // a shipped config, or the embedded default pod
  std::vector<std::string> sets;
  std::uint32_t gpus = 0;
  std::string load;
  std::string group;  // "vs smallest" compares with this group's smallest pod
};

struct Row {
  int exit_code = -1;  // the run's (-1: killed, by `signal`)
  int signal = 0;
  bool differs = false;  // ran to the end, but gave other results than round 1
  std::uint64_t accesses = 0;
  double access_s = 0, setup_s = 0, teardown_s = 0;
  double rss_mib = 0;
  double serves = 0, activations = 0, notifications = 0;  // per remote access
  std::uint64_t packets_peak = 0;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double number(const json::value& v) {
  if (v.is_double()) return v.as_double();
  if (v.is_int64()) return static_cast<double>(v.as_int64());
  if (v.is_uint64()) return static_cast<double>(v.as_uint64());
  return 0;
}

std::vector<std::string> load_sets(const std::string& load) {
  if (load == "closed")
    return {"workload.traffic.injection=closed_loop", "workload.traffic.outstanding=32"};
  return {"workload.traffic.injection=poisson", "workload.traffic.offered_load=0.5"};
}

// Why a round did not give a result (empty: it did).
std::string failure_of(const Row& r) {
  if (r.differs) return "rounds differ";
  if (r.signal != 0) return fmt::format("killed by signal {}", r.signal);
  if (r.exit_code != 0) return fmt::format("failed (exit {})", r.exit_code);
  if (r.accesses == 0) return "no remote accesses";
  return {};
}

std::string rate_text(double r) {
  return r >= 1e6 ? fmt::format("{:.2f} M", r / 1e6) : fmt::format("{:.0f} K", r / 1e3);
}

}  // namespace

int bench_command(const BenchOptions& opt, std::ostream& out, std::ostream& err) {
  for (const auto& l : opt.loads)
    if (l != "closed" && l != "poisson") {
      fmt::print(err, "podsim bench: --loads: '{}' is not a load (expected closed or poisson)\n",
                 l);
      return 2;
    }
  // A point per size and load: each once (two of one name would share its folder).
  if (opt.gpus.empty() || opt.loads.empty()) {
    fmt::print(err, "podsim bench: {} is empty: expected at least one {}\n",
               opt.gpus.empty() ? "--gpus" : "--loads", opt.gpus.empty() ? "pod size" : "load");
    return 2;
  }
  auto given_twice = [&](const char* option, const auto& list) {
    for (auto it = list.begin(); it != list.end(); ++it)
      if (std::find(list.begin(), it, *it) != it) {
        fmt::print(err, "podsim bench: {} gives {} twice\n", option, *it);
        return true;
      }
    return false;
  };
  if (given_twice("--gpus", opt.gpus) || given_twice("--loads", opt.loads)) return 2;
  // What a point's name and row state is the bench's to set: neither it nor a section holding
  // it (--set pod={"gpus": 4}) may be set.
  for (const std::string& s : opt.overrides) {
    const std::string key = s.substr(0, s.find('='));
    for (const std::string own : {"pod.gpus", "workload.traffic.injection"})
      if (config::paths_overlap(own, key)) {
        fmt::print(err,
                   "podsim bench: --set {}: every point sets {} (choose with {}); a point's row "
                   "would not say what ran\n",
                   s, own, own == "pod.gpus" ? "--gpus" : "--loads");
        return 2;
      }
  }
  if (opt.accesses == 0) {
    fmt::print(err, "podsim bench: --accesses must be at least 1\n");
    return 2;
  }
  if (opt.rounds < 1 || opt.rounds > 100) {
    fmt::print(err, "podsim bench: --rounds {}: expected 1 to 100\n", opt.rounds);
    return 2;
  }
  // The same pod at every size: the default pod on one switch with a port per GPU, each GPU
  // importing from 7 peers (all of them at 8 GPUs; every other below) and loading and storing
  // across them, the same load per GPU; the accesses spread over the GPUs.
  std::vector<Point> points;
  for (const std::string& load : opt.loads)
    for (std::uint32_t n : opt.gpus) {
      Point p;
      p.name = fmt::format("default-{}gpu-{}", n, load);
      p.gpus = n;
      p.load = load;
      p.group = load;
      const std::uint64_t per_gpu = (opt.accesses + n - 1) / n;
      p.sets = {fmt::format("pod.gpus={}", n),
                fmt::format("fabric.switch.ports={}", std::max(n, 64u)),
                "gpu.driver.accel_max=1024", fmt::format("workload.peers={}", std::min(7u, n - 1)),
                fmt::format("workload.traffic.accesses={}", per_gpu)};
      for (auto& s : load_sets(load))
        p.sets.push_back(s);
      points.push_back(std::move(p));
    }
  // The pod as a new user first runs it: the default all_to_all, every GPU importing from
  // every other, on a 128-port switch, closed loop with 32 outstanding (the measurement that
  // opened issue 9). At each size up to 128 GPUs (the imports grow as N squared), and at the
  // largest of those with only 8 GPUs initiating (the others only serve).
  const bool closed =
      std::find(opt.loads.begin(), opt.loads.end(), std::string("closed")) != opt.loads.end();
  if (opt.all_peers && closed) {
    // `initiators` of the `n` GPUs issue (the first ones), the accesses spread over them.
    auto all_peers = [&](std::string name, std::uint32_t n, std::uint32_t initiators) {
      Point p;
      p.name = std::move(name);
      p.gpus = n;
      p.load = "closed";
      p.group = "all-peers";
      p.sets = {fmt::format("pod.gpus={}", n), "fabric.switch.ports=128",
                "workload.traffic.outstanding=32"};
      if (initiators < n) {
        std::vector<std::uint32_t> first(initiators);
        std::iota(first.begin(), first.end(), 0u);
        p.sets.push_back(fmt::format("workload.initiators=[{}]", fmt::join(first, ",")));
      }
      p.sets.push_back(fmt::format("workload.traffic.accesses={}",
                                   (opt.accesses + initiators - 1) / initiators));
      points.push_back(std::move(p));
    };
    std::uint32_t largest = 0;
    for (std::uint32_t n : opt.gpus) {
      if (n > 128) continue;
      largest = std::max(largest, n);
      all_peers(fmt::format("all-peers-{}gpu", n), n, n);
    }
    if (largest > 8) all_peers(fmt::format("all-peers-{}gpu-8-initiators", largest), largest, 8);
  }
  for (Point& p : points)
    p.sets.insert(p.sets.end(), opt.overrides.begin(), opt.overrides.end());
  // The shipped big pods as an architect runs them, with enough accesses to measure: their
  // GPUs and load are what the config (with --set) says.
  std::vector<std::string> skipped;
  if (opt.shipped && !opt.configs_dir.empty()) {
    if (opt.configs_given && !fs::is_directory(opt.configs_dir)) {
      fmt::print(err,
                 "podsim bench: --configs {}: not a folder (of helios-72.json and "
                 "pod-1024.json)\n",
                 opt.configs_dir);
      return 2;
    }
    for (const char* file : {"helios-72.json", "pod-1024.json"}) {
      const fs::path cfg = fs::path(opt.configs_dir) / file;
      if (!fs::exists(cfg)) {
        skipped.push_back(cfg.string());
        fmt::print(err, "podsim bench: {} not found (--configs names the folder): skipped\n",
                   cfg.string());
        continue;
      }
      Point p;
      p.name = fs::path(file).stem().string();
      p.config = cfg.string();
      p.sets = opt.overrides;
      try {
        const PodConfig c = load_pod_config(p.config, p.sets);
        p.gpus = c.pod.gpus;
        p.load = c.workload.traffic.injection == Injection::ClosedLoop ? "closed" : "poisson";
      } catch (const config::ConfigError& e) {
        fmt::print(err, "podsim bench: config error at point {}: {}\n", p.name, e.what());
        return 2;
      }
      p.sets.insert(p.sets.begin(), fmt::format("workload.traffic.accesses={}",
                                                (opt.accesses + p.gpus - 1) / p.gpus));
      points.push_back(std::move(p));
    }
  }

  // Every point's config is checked before anything runs.
  for (const Point& p : points) {
    try {
      (void)load_pod_config(p.config, p.sets);
    } catch (const config::ConfigError& e) {
      fmt::print(err, "podsim bench: config error at point {}: {}\n", p.name, e.what());
      return 2;
    }
  }

  const fs::path dir(opt.out_dir);
  // The outputs are this run's alone: a bench run before into the same folder (with other
  // points or rounds) leaves nothing behind to be taken for this one's, even if this one is
  // stopped before it writes its table.
  try {
    if (fs::exists(dir) && !fs::is_directory(dir)) {
      fmt::print(err, "podsim bench: --out {}: not a directory\n", dir.string());
      return 2;
    }
    for (const char* f : {"bench.md", "bench.json"})
      remove_if_regular(dir / f);
    fs::remove_all(dir / "points");
    fs::create_directories(dir / "points");
  } catch (const fs::filesystem_error& e) {
    fmt::print(err, "podsim bench: --out {}: {}\n", dir.string(), e.code().message());
    return 2;
  }
  const std::string self = self_executable();
  // Each round runs every point once, in order, so that a slow spell of the machine falls on
  // all points alike rather than on one point's every run.
  std::vector<std::vector<Row>> runs(points.size());
  int rc = 0;
  for (std::uint64_t round = 1; round <= opt.rounds; ++round)
    for (std::size_t i = 0; i < points.size(); ++i) {
      const Point& p = points[i];
      if (!runs[i].empty() && (runs[i].back().exit_code != 0 || runs[i].back().differs))
        continue;  // failed: not again
      const fs::path pdir = opt.rounds == 1 ? dir / "points" / p.name
                                            : dir / "points" / p.name / std::to_string(round);
      ChildJob j;
      j.argv = {self, "run"};
      if (p.config) j.argv.push_back(*p.config);
      for (const auto& s : p.sets) {
        j.argv.push_back("--set");
        j.argv.push_back(s);
      }
      j.argv.insert(j.argv.end(), {"--quiet", "--out", pdir.string()});
      j.stdout_path = (pdir.parent_path() / (pdir.filename().string() + ".stdout")).string();
      j.stderr_path = (pdir.parent_path() / (pdir.filename().string() + ".stderr")).string();
      fs::create_directories(pdir.parent_path());
      if (!opt.quiet) {
        if (opt.rounds == 1)
          fmt::print(err, "[{}/{}] {} ...\n", i + 1, points.size(), p.name);
        else
          fmt::print(err, "[round {}/{}, {}/{}] {} ...\n", round, opt.rounds, i + 1, points.size(),
                     p.name);
      }
      const ChildResult r = run_children({j}, 1).front();
      Row& row = runs[i].emplace_back();
      row.exit_code = r.exit_code;
      row.signal = r.signal;
      if (r.exit_code != 0) {
        rc = 1;
        fmt::print(err, "podsim bench: point {} {} in round {}; see {}\n", p.name, failure_of(row),
                   round, j.stderr_path);
        continue;
      }
      const std::string stats_text = slurp(pdir / "stats.json");
      const json::value run = json::parse(slurp(pdir / "run.json"));
      const json::value stats = json::parse(stats_text);
      row.accesses = static_cast<std::uint64_t>(
          number(stats.at("stats").at("pod.summary.remote_accesses").at("value")));
      const json::object& host = run.at("host").as_object();
      row.access_s = number(host.at("access_seconds"));
      row.setup_s = number(host.at("setup_seconds"));
      row.teardown_s = number(host.at("teardown_seconds"));
      // The run's own peak (not wait4's, which counts this process's size at the fork).
      row.rss_mib = number(host.at("peak_rss_bytes")) / (1024.0 * 1024.0);
      const json::object& k = run.at("kernel").as_object();
      const double n = row.accesses ? static_cast<double>(row.accesses) : 1.0;
      row.serves = number(k.at("access_phase_serves")) / n;
      row.activations = number(k.at("access_phase_activations")) / n;
      row.notifications = number(k.at("access_phase_notifications")) / n;
      row.packets_peak = static_cast<std::uint64_t>(number(k.at("packets_peak")));
      if (round == 1) continue;
      // The same config and seed give the same results, and the same work, every time: a
      // round that does not is a fault of the simulator, not noise.
      const fs::path first_dir = pdir.parent_path() / "1";
      const char* what =
          stats_text != slurp(first_dir / "stats.json") ? "stats.json"
          : json::serialize(k) !=
                  json::serialize(json::parse(slurp(first_dir / "run.json")).at("kernel"))
              ? "kernel counts (run.json's kernel)"
              : nullptr;
      if (what) {
        rc = 1;
        row.differs = true;
        fmt::print(err,
                   "podsim bench: point {}: round {} gave other {} than round 1 (the same "
                   "config and seed must give the same results); see {}\n",
                   p.name, round, what, pdir.string());
      }
    }
  // Each point's row: the median of its rounds, figure by figure (the counts are the same in
  // every round); a point with a failed round is reported as failed (its last round, the one
  // that failed: no round runs after a failure).
  std::vector<Row> rows(points.size());
  for (std::size_t i = 0; i < points.size(); ++i) {
    const std::vector<Row>& rr = runs[i];
    if (!failure_of(rr.back()).empty()) {
      rows[i] = rr.back();
      continue;
    }
    rows[i] = rr.front();
    auto median = [&](double Row::*field) {
      std::vector<double> v;
      for (const Row& r : rr)
        v.push_back(r.*field);
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    rows[i].access_s = median(&Row::access_s);
    rows[i].setup_s = median(&Row::setup_s);
    rows[i].teardown_s = median(&Row::teardown_s);
    rows[i].rss_mib = median(&Row::rss_mib);
  }

  // The table: per-access host cost against the smallest pod of the same group (load).
  std::map<std::string, std::pair<std::uint32_t, double>> base;  // group -> gpus, host us
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    if (p.group.empty() || !failure_of(rows[i]).empty()) continue;
    const double us = rows[i].access_s * 1e6 / static_cast<double>(rows[i].accesses);
    auto it = base.find(p.group);
    if (it == base.end() || p.gpus < it->second.first) base[p.group] = {p.gpus, us};
  }
  std::string md =
      fmt::format(
          "| point | GPUs | load | remote accesses | per host second (access phase) | host "
          "us per access{} | vs smallest | setup s | teardown s | peak RSS MiB | peak "
          "packets held | serves per access | activations per access | notifications "
          "per access |\n",
          opt.rounds > 1 ? fmt::format(" (median of {}: least-most)", opt.rounds) : "") +
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  json::array jrows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const Point& p = points[i];
    const Row& r = rows[i];
    json::object o;
    o["point"] = p.name;
    o["config"] = p.config ? json::value(*p.config) : json::value(nullptr);
    json::array sets;
    for (const auto& s : p.sets)
      sets.emplace_back(s);
    o["set"] = std::move(sets);
    o["gpus"] = p.gpus;
    o["load"] = p.load;
    o["exit_code"] = r.exit_code;
    // Every round that gave a result, its cost per access (the same accesses each time).
    json::array rounds;
    double least = 0, most = 0;
    for (const Row& x : runs[i]) {
      if (!failure_of(x).empty()) continue;
      const double xus = x.access_s * 1e6 / static_cast<double>(x.accesses);
      least = rounds.empty() ? xus : std::min(least, xus);
      most = rounds.empty() ? xus : std::max(most, xus);
      rounds.push_back(json::object{{"access_phase_seconds", x.access_s},
                                    {"host_us_per_access", xus},
                                    {"setup_seconds", x.setup_s},
                                    {"teardown_seconds", x.teardown_s},
                                    {"peak_rss_mib", x.rss_mib}});
    }
    if (const std::string why = failure_of(r); !why.empty()) {
      // A run that failed (or differed) ended the point's rounds; one with no remote accesses
      // (every round alike) did not.
      const bool failed = r.exit_code != 0 || r.differs;
      md += fmt::format(
          "| {} | {} | {} | {} | | | | | | | | | | |\n", p.name, p.gpus, p.load,
          failed && opt.rounds > 1 ? fmt::format("{} in round {}", why, runs[i].size()) : why);
      o["failure"] = why;
      if (failed) o["failed_round"] = runs[i].size();
      o["rounds"] = std::move(rounds);
      jrows.push_back(std::move(o));
      continue;
    }
    const double us = r.access_s * 1e6 / static_cast<double>(r.accesses);
    const double rate = static_cast<double>(r.accesses) / r.access_s;
    const auto b = p.group.empty() ? base.end() : base.find(p.group);
    const std::string rel = b != base.end() && b->second.second > 0
                                ? fmt::format("{:.2f}x", us / b->second.second)
                                : "";
    const std::string spread =
        runs[i].size() > 1 ? fmt::format(" ({:.2f}-{:.2f})", least, most) : std::string();
    md += fmt::format(
        "| {} | {} | {} | {} | {} | {:.2f}{} | {} | {:.2f} | {:.2f} | {:.0f} | {} | {:.2f} | "
        "{:.2f} | {:.2f} |\n",
        p.name, p.gpus, p.load, r.accesses, rate_text(rate), us, spread, rel, r.setup_s,
        r.teardown_s, r.rss_mib, r.packets_peak, r.serves, r.activations, r.notifications);
    o["remote_accesses"] = r.accesses;
    o["access_phase_seconds"] = r.access_s;
    o["remote_accesses_per_host_second"] = rate;
    o["host_us_per_access"] = us;
    o["setup_seconds"] = r.setup_s;
    o["teardown_seconds"] = r.teardown_s;
    o["peak_rss_mib"] = r.rss_mib;
    o["packets_peak"] = r.packets_peak;
    o["serves_per_access"] = r.serves;
    o["activations_per_access"] = r.activations;
    o["notifications_per_access"] = r.notifications;
    o["rounds"] = std::move(rounds);
    jrows.push_back(std::move(o));
  }
  json::array jskipped;
  for (const std::string& f : skipped) {
    md += fmt::format("\nNot measured: {} (not found).\n", f);
    jskipped.emplace_back(f);
  }
  write_file(dir / "bench.md", md);
  write_file(dir / "bench.json", config::to_pretty_json(json::object{
                                     {"points", jrows}, {"skipped", std::move(jskipped)}}));
  out << md;
  return rc;
}

}  // namespace podsim::tools
