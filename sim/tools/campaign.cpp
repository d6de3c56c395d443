#include "sim/tools/campaign.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <vector>

#include "sim/core/files.hpp"
#include "sim/core/json_write.hpp"
#include "sim/core/rng.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/tools/process_pool.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

std::string us(std::uint64_t v) {
  return fmt::format("{}us", v);
}

}  // namespace

std::string campaign_scenario(std::uint64_t seed) {
  Rng rng = Rng::for_component(seed, "campaign");
  auto pick = [&](std::uint64_t lo, std::uint64_t hi) { return lo + rng.below(hi - lo + 1); };
  auto chance = [&](double p) { return rng.uniform() < p; };

  const auto gpus = static_cast<std::uint32_t>(pick(2, 6));
  json::object cfg;
  cfg["name"] = fmt::format("campaign-{}", seed);
  cfg["seed"] = seed;
  json::object pod{{"gpus", gpus}};
  pod["addr_mode"] = chance(0.5) ? "source_aliasing" : "source_identification";
  if (gpus % 2 == 0 && chance(0.25)) pod["gpus_per_host"] = 2;
  cfg["pod"] = std::move(pod);
  static const char* const kAfterReset[] = {"lazy", "quarantine", "announce"};
  json::object driver{{"response_timeout", "3ms"},
                      {"release_timeout", "3ms"},
                      {"writeback_timeout", "2ms"},
                      {"after_reset", kAfterReset[rng.below(3)]}};
  if (chance(0.2)) driver["exported_memory"] = "unpinned";
  cfg["gpu"] = json::object{{"driver", std::move(driver)}};
  if (chance(0.3)) cfg["fabric"] = json::object{{"link", json::object{{"flit_error_rate", 1e-3}}}};
  cfg["sim"] = json::object{{"max_time", "30s"}};

  // Who exports to whom: each GPU exports with probability 0.7 to a random set of the others.
  // At least GPU 0 exports to GPU 1 (a scenario has steps).
  std::vector<std::vector<std::uint32_t>> importers(gpus);  // by exporter
  for (std::uint32_t e = 0; e < gpus; ++e) {
    if (e != 0 && !chance(0.7)) continue;
    for (std::uint32_t i = 0; i < gpus; ++i)
      if (i != e && ((e == 0 && i == 1) || chance(0.6))) importers[e].push_back(i);
  }
  json::array steps;
  auto step = [&](json::object s) { steps.push_back(std::move(s)); };
  // Exporters: process 2 allocates, exports, hands the handle out, and may close the buffer
  // later (a revoke under its importers' traffic).
  for (std::uint32_t e = 0; e < gpus; ++e) {
    if (importers[e].empty()) continue;
    const std::uint64_t kib = std::uint64_t{4} << rng.below(9);  // 4 KiB .. 1 MiB
    step({{"gpu", e},
          {"process", 2},
          {"op", "alloc"},
          {"size", fmt::format("{}KiB", kib)},
          {"name", "b"}});
    step({{"gpu", e}, {"process", 2}, {"op", "export"}, {"buffer", "b"}, {"name", "h"}});
    for (std::uint32_t i : importers[e])
      step({{"gpu", e},
            {"process", 2},
            {"op", "send_handle"},
            {"handle", "h"},
            {"to", i},
            {"as", fmt::format("h{}", e)}});
    if (chance(0.5))
      step({{"gpu", e},
            {"process", 2},
            {"op", "close"},
            {"buffer", "b"},
            {"at", us(pick(100, 2000))}});
  }
  // Importers: process 1 imports and maps each handle it gets, then loads and stores.
  for (std::uint32_t i = 0; i < gpus; ++i) {
    json::array mappings;
    for (std::uint32_t e = 0; e < gpus; ++e) {
      if (std::find(importers[e].begin(), importers[e].end(), i) == importers[e].end()) continue;
      step({{"gpu", i},
            {"op", "import"},
            {"handle", fmt::format("h{}", e)},
            {"name", fmt::format("f{}", e)},
            {"retries", 3}});
      step({{"gpu", i},
            {"op", "map"},
            {"fd", fmt::format("f{}", e)},
            {"name", fmt::format("m{}", e)}});
      mappings.emplace_back(fmt::format("m{}", e));
    }
    if (mappings.empty()) continue;
    json::object access{{"gpu", i},
                        {"op", "access"},
                        {"mappings", std::move(mappings)},
                        {"accesses", pick(50, 800)},
                        {"outstanding", pick(1, 16)}};
    if (chance(0.7)) access["at"] = us(pick(50, 1500));
    step(std::move(access));
  }
  // The pod's own steps: resets and faults at random times.
  const std::uint64_t resets = rng.below(3);
  for (std::uint64_t k = 0; k < resets; ++k)
    step({{"op", "reset_node"},
          {"gpu", rng.below(gpus)},
          {"at", us(pick(20, 2500))},
          {"down_for", us(pick(0, 200))}});
  static const char* const kCounted[] = {"firmware_drop",        "pin_failure",
                                         "map_failure",          "ring_corrupt",
                                         "import_alloc_failure", "export_alloc_failure"};
  const std::uint64_t faults = rng.below(4);
  for (std::uint64_t k = 0; k < faults; ++k) {
    json::object f{{"op", "fault"}, {"gpu", rng.below(gpus)}, {"at", us(pick(0, 2500))}};
    switch (rng.below(4)) {
      case 0:
        f["fault"] = "firmware_error";
        f["status"] = pick(1, 9);
        f["count"] = pick(1, 3);
        break;
      case 1:
        f["fault"] = chance(0.5) ? "firmware_stall" : "message_delay";
        f["for"] = us(pick(10, 3000));
        break;
      default:
        f["fault"] = kCounted[rng.below(std::size(kCounted))];
        f["count"] = pick(1, 3);
        break;
    }
    step(std::move(f));
  }
  // Drawn from a stream of their own, so that every seed's scenario above stays what it was
  // (seeds that found something are kept in tests/campaign): link error rates over four
  // decades, and rings that fill (a few slots, a receiver's firmware stalling meanwhile).
  Rng more = Rng::for_component(seed, "campaign.links_rings");
  if (cfg.contains("fabric")) {
    static const double kRates[] = {1e-4, 1e-3, 1e-2, 5e-2};
    cfg["fabric"].as_object()["link"].as_object()["flit_error_rate"] = kRates[more.below(4)];
  } else if (more.uniform() < 0.1) {
    static const double kBer[] = {1e-8, 1e-6};
    cfg["fabric"] = json::object{{"link", json::object{{"bit_error_rate", kBer[more.below(2)]}}}};
  }
  if (more.uniform() < 0.25) {
    cfg["gpu"].as_object()["mailbox"] = json::object{{"ring_slots", 2 + more.below(3)}};
    steps.push_back(json::object{{"op", "fault"},
                                 {"gpu", more.below(gpus)},
                                 {"at", us(50 + more.below(1500))},
                                 {"fault", "firmware_stall"},
                                 {"for", us(100 + more.below(1900))}});
  }
  // Links that stall (under sim.stall_limit: traffic waits, nothing is lost).
  if (more.uniform() < 0.15)
    steps.push_back(json::object{{"op", "fault"},
                                 {"gpu", more.below(gpus)},
                                 {"at", us(more.below(2000))},
                                 {"fault", "link_stall"},
                                 {"for", us(10 + more.below(790))}});
  cfg["workload"] =
      json::object{{"kind", "scenario"}, {"on_failure", "continue"}, {"steps", std::move(steps)}};
  return config::to_pretty_json(cfg);
}

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// How a run ended, from its exit, its run.json and its stderr: `why` empty when cleanly.
struct Verdict {
  std::string why;
  bool stale = false;  // stale imports at teardown (allowed)
};
Verdict judge(const ChildResult& r, const fs::path& dir, const fs::path& err_file) {
  if (r.exit_code < 0) return {fmt::format("killed by signal {}", r.signal)};
  if (r.exit_code == 2) return {"config error (the generator made a config podsim refuses)"};
  if (r.exit_code != 0 && r.exit_code != 1) return {fmt::format("exit {}", r.exit_code)};
  if (slurp(err_file).find("internal error") != std::string::npos) return {"internal error"};
  if (!fs::exists(dir / "run.json")) return {"no run.json (the run did not finish writing)"};
  boost::system::error_code ec;
  const json::value run = json::parse(slurp(dir / "run.json"), ec);
  if (ec || !run.is_object()) return {"run.json is not valid JSON"};
  const json::object& o = run.as_object();
  if (!o.contains("finished") || !o.at("finished").as_bool()) {
    // Stopped by the watchdog (a failure naming what was stuck), or at sim.max_time.
    if (const auto* f = o.if_contains("failures"); f && f->is_array())
      for (const auto& x : f->as_array())
        if (x.is_string() && x.as_string().starts_with("stuck at "))
          return {fmt::format("stopped by the watchdog: {}",
                              std::string(x.as_string()).substr(0, 200))};
    return {"unfinished at sim.max_time (a hang?)"};
  }
  if (const auto& v = o.at("invariant_violations").as_array(); !v.empty())
    return {fmt::format("{} invariant violation(s), the first: {}", v.size(),
                        std::string(v[0].at("what").as_string()))};
  if (r.exit_code == 1 && o.at("failures").as_array().empty())
    return {"exit 1 with no failed step and no violation"};
  return {"", !o.at("stale_imports").as_array().empty()};
}

}  // namespace

int campaign_command(const CampaignOptions& opt, std::ostream& out, std::ostream& err) {
  if (opt.seeds == 0 || opt.jobs == 0) {
    fmt::print(err, "podsim campaign: --seeds and --jobs must be at least 1\n");
    return 2;
  }
  if (opt.seeds - 1 > std::numeric_limits<std::uint64_t>::max() - opt.first_seed) {
    fmt::print(err,
               "podsim campaign: --first {} and --seeds {} go past the largest seed, 2^64 - 1\n",
               opt.first_seed, opt.seeds);
    return 2;
  }
  // A --set that the campaign's scenarios do not take is the command line's error, not the
  // generator's: checked on the first seed's scenario before any seed runs.
  try {
    config::ConfigDoc doc = config::ConfigDoc::from_text(
        campaign_scenario(opt.first_seed), fmt::format("seed {}'s scenario", opt.first_seed));
    for (const auto& s : opt.overrides)
      doc.apply_override(s);
    (void)read_pod_config(doc);
  } catch (const config::ConfigError& e) {
    fmt::print(err, "podsim campaign: config error (seed {}'s scenario with --set): {}\n",
               opt.first_seed, e.what());
    return 2;
  }
  const fs::path dir(opt.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    fmt::print(err, "podsim campaign: cannot create {}: {}\n", dir.string(), ec.message());
    return 2;
  }
  // The seeds run a batch at a time: each batch's scenarios are written as it starts, and the
  // clean ones removed as it ends, so the folder holds one batch's (and the findings) however
  // many seeds the campaign runs.
  const std::uint64_t batch = std::max<std::uint64_t>(64, 4ull * opt.jobs);
  std::uint64_t done = 0, runs = 0;
  std::size_t clean = 0, failed_steps = 0, stale = 0;
  std::vector<std::string> findings;
  for (std::uint64_t from = 0, n = 0; from < opt.seeds; from += n) {
    n = std::min(batch, opt.seeds - from);
    std::vector<ChildJob> jobs;
    std::vector<std::uint64_t> seeds;
    for (std::uint64_t k = from; k < from + n; ++k) {
      const std::uint64_t seed = opt.first_seed + k;
      const fs::path point = dir / fmt::format("seed-{}", seed);
      fs::remove_all(point, ec);
      fs::create_directories(point, ec);
      write_file(point / "scenario.json", campaign_scenario(seed));
      std::vector<std::string> argv{self_executable(), "run",   (point / "scenario.json").string(),
                                    "--quiet",         "--out", (point / "out").string()};
      for (const auto& o : opt.overrides) {
        argv.push_back("--set");
        argv.push_back(o);
      }
      jobs.push_back(
          {std::move(argv), (point / "stdout.txt").string(), (point / "stderr.txt").string()});
      seeds.push_back(seed);
    }
    const auto results = run_children(jobs, opt.jobs, [&](std::size_t, const ChildResult&) {
      ++done;
      if (!opt.quiet && (done % 50 == 0 || done == opt.seeds))
        fmt::print(err, "[{}/{}]\n", done, opt.seeds);
    });
    runs += results.size();
    for (std::size_t k = 0; k < results.size(); ++k) {
      const fs::path point = dir / fmt::format("seed-{}", seeds[k]);
      const Verdict v = judge(results[k], point / "out", point / "stderr.txt");
      if (!v.why.empty()) {
        findings.push_back(fmt::format("seed {}: {} ({})", seeds[k], v.why, point.string()));
        continue;
      }
      ++(results[k].exit_code == 0 ? clean : failed_steps);
      stale += v.stale;
      if (!opt.keep) fs::remove_all(point, ec);
    }
  }
  fmt::print(out,
             "campaign: seeds {}..{}: {} runs; {} clean, {} with steps failing as faults make "
             "them (errnos), {} with stale imports at teardown; {} finding(s)\n",
             opt.first_seed, opt.first_seed + (opt.seeds - 1), runs, clean, failed_steps, stale,
             findings.size());
  for (const auto& f : findings)
    fmt::print(out, "  {}\n", f);
  return findings.empty() ? 0 : 1;
}

}  // namespace podsim::tools
