#include "sim/tools/regress.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>
#include <unistd.h>
#include <algorithm>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sim/core/config_io.hpp"
#include "sim/core/files.hpp"
#include "sim/core/json_write.hpp"
#include "sim/tools/golden.hpp"
#include "sim/tools/process_pool.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct Case {
  std::string name;
  fs::path config;
  std::vector<std::string> set;
};

struct CasesError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw CasesError(fmt::format("{}: cannot read", p.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::value parse_file(const fs::path& p) {
  json::parse_options po;
  po.allow_comments = true;
  po.allow_trailing_commas = true;
  boost::system::error_code ec;
  const std::string text = slurp(p);
  json::value v = json::parse(text, ec, {}, po);
  if (ec) throw CasesError(fmt::format("{}: not valid JSON: {}", p.string(), ec.message()));
  if (const auto d = config::find_duplicate_key(text))  // the parser would keep the last
    throw CasesError(fmt::format("{}: {}: the key appears twice", p.string(), d->path));
  return v;
}

// cases.json: {"configs_dir": "...", "cases": {"NAME": {"set": ["k=v", ...]}, ...}}; every
// config in configs_dir must have a case, and every case a config.
std::vector<Case> read_cases(const fs::path& dir) {
  const fs::path file = dir / "cases.json";
  const json::value v = parse_file(file);
  const auto* top = v.if_object();
  if (!top) throw CasesError(file.string() + ": expected an object");
  for (const auto& [k, x] : *top)
    if (k != "configs_dir" && k != "cases")
      throw CasesError(fmt::format("{}: {}: unknown key; expected configs_dir, cases",
                                   file.string(), std::string(k)));
  const auto* cdir = top->if_contains("configs_dir");
  const auto* cases = top->if_contains("cases");
  if (!cdir || !cdir->is_string() || !cases || !cases->is_object())
    throw CasesError(file.string() +
                     ": expected \"configs_dir\" (a string) and \"cases\" (an "
                     "object)");
  const fs::path configs = (dir / std::string(cdir->as_string())).lexically_normal();
  std::vector<Case> out;
  for (const auto& [name, c] : cases->as_object()) {
    const std::string where = fmt::format("{}: cases.{}", file.string(), std::string(name));
    const auto* o = c.if_object();
    if (!o) throw CasesError(where + ": expected an object");
    Case k{std::string(name), configs / (std::string(name) + ".json"), {}};
    for (const auto& [key, x] : *o) {
      if (key != "set")
        throw CasesError(fmt::format("{}.{}: unknown key; expected set", where, std::string(key)));
      if (!x.is_array()) throw CasesError(where + ".set: expected an array of strings");
      for (const auto& s : x.as_array()) {
        if (!s.is_string()) throw CasesError(where + ".set: expected an array of strings");
        k.set.emplace_back(s.as_string());
      }
    }
    if (!fs::exists(k.config))
      throw CasesError(fmt::format("{}: there is no config {}", where, k.config.string()));
    out.push_back(std::move(k));
  }
  std::vector<std::string> uncovered;
  for (const auto& e : fs::directory_iterator(configs))
    if (e.path().extension() == ".json") {
      const std::string stem = e.path().stem().string();
      if (std::none_of(out.begin(), out.end(), [&](const Case& c) { return c.name == stem; }))
        uncovered.push_back(e.path().filename().string());
    }
  if (!uncovered.empty()) {
    std::sort(uncovered.begin(), uncovered.end());
    throw CasesError(
        fmt::format("{}: shipped configs with no regression case: {} (add them, "
                    "then scripts/bless-goldens.sh)",
                    file.string(), fmt::join(uncovered, ", ")));
  }
  return out;
}

// What a golden file holds for one run.
json::object result_of(const Case& c, const fs::path& out_dir, int exit_code) {
  json::object g;
  g["case"] = c.name;
  json::array set;
  for (const auto& s : c.set)
    set.emplace_back(s);
  g["set"] = std::move(set);
  g["exit_code"] = exit_code;
  const fs::path stats_file = out_dir / "stats.json";
  const fs::path run_file = out_dir / "run.json";
  if (!fs::exists(stats_file) || !fs::exists(run_file)) return g;
  const json::value stats = parse_file(stats_file);
  const json::value run = parse_file(run_file);
  g["seed"] = stats.at("seed");
  g["simulated_time_ns"] = stats.at("simulated_time_ns");
  json::object outcome;
  outcome["finished"] = run.at("finished");
  outcome["failures"] = run.at("failures").as_array().size();
  outcome["invariant_violations"] = run.at("invariant_violations").as_array().size();
  outcome["faults"] = run.at("faults").as_array().size();
  g["run"] = std::move(outcome);
  g["digest"] = stats_digest(stats.at("stats").as_object());
  g["stats"] = condense_stats(stats.at("stats").as_object());
  return g;
}

// The run's own fields and the pod summary's first (what a reader looks at first), then every
// component's, each in key order.
void print_diffs(std::ostream& out, std::vector<Difference> d, std::size_t limit = 60) {
  auto rank = [](const Difference& x) {
    return x.key.rfind("stats.", 0) != 0 ? 0 : x.key.rfind("stats.pod.summary.", 0) == 0 ? 1 : 2;
  };
  std::stable_sort(d.begin(), d.end(),
                   [&](const Difference& a, const Difference& b) { return rank(a) < rank(b); });
  for (std::size_t i = 0; i < d.size() && i < limit; ++i)
    fmt::print(out, "    {}: {} -> {}\n", d[i].key, d[i].golden, d[i].actual);
  if (d.size() > limit) fmt::print(out, "    ... and {} more\n", d.size() - limit);
}

}  // namespace

int regress_command(const RegressOptions& opt, std::ostream& out, std::ostream& err) {
  std::vector<Case> cases;
  try {
    cases = read_cases(opt.dir);
  } catch (const CasesError& e) {
    fmt::print(err, "podsim regress: {}\n", e.what());
    return 2;
  }
  if (!opt.cases.empty()) {
    std::vector<Case> chosen;
    for (const auto& name : opt.cases) {
      auto it =
          std::find_if(cases.begin(), cases.end(), [&](const Case& c) { return c.name == name; });
      if (it == cases.end()) {
        fmt::print(err, "podsim regress: no case named '{}' in {}\n", name,
                   (fs::path(opt.dir) / "cases.json").string());
        return 2;
      }
      chosen.push_back(*it);
    }
    cases = std::move(chosen);
  }

  // One `podsim run` per case, in a scratch directory.
  // mkdtemp's template: six X's it replaces.
  std::string tmpl =
      (fs::temp_directory_path() / ("podsim-regress-" + std::string(6, 'X'))).string();
  if (!::mkdtemp(tmpl.data())) {
    fmt::print(err, "podsim regress: cannot make a scratch directory\n");
    return 1;
  }
  const fs::path scratch = tmpl;
  const std::string self = self_executable();
  std::vector<ChildJob> jobs;
  for (const Case& c : cases) {
    ChildJob j;
    j.argv = {self, "run", c.config.string(), "--quiet", "--out", (scratch / c.name).string()};
    for (const auto& s : c.set) {
      j.argv.push_back("--set");
      j.argv.push_back(s);
    }
    j.stdout_path = (scratch / (c.name + ".stdout")).string();
    j.stderr_path = (scratch / (c.name + ".stderr")).string();
    jobs.push_back(std::move(j));
  }
  const auto results = run_children(jobs, opt.jobs);

  int rc = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const json::object actual = result_of(c, scratch / c.name, results[i].exit_code);
    const fs::path golden_file = fs::path(opt.dir) / "golden" / (c.name + ".json");
    if (!actual.contains("stats")) {
      fmt::print(out, "{}: the run wrote no results (exit {}): {}\n", c.name, results[i].exit_code,
                 slurp(jobs[i].stderr_path));
      rc = 1;
      continue;
    }
    std::vector<Difference> diffs;
    bool have_golden = fs::exists(golden_file);
    // A golden that cannot be read is this case's failure (blessing writes a new one); the
    // other cases are still compared.
    json::object golden;
    if (have_golden) {
      try {
        const json::value v = parse_file(golden_file);
        if (!v.is_object() || !v.as_object().contains("digest") || !v.as_object().contains("stats"))
          throw CasesError(golden_file.string() +
                           ": not a golden (an object with \"digest\" and \"stats\")");
        golden = v.as_object();
      } catch (const CasesError& e) {
        fmt::print(out, "{}: {}\n", c.name, e.what());
        have_golden = false;
        if (!opt.bless) {
          rc = 1;
          continue;
        }
      }
    }
    if (have_golden) {
      json::object g = golden, a = actual;
      g.erase("digest");
      a.erase("digest");
      diffs = compare_condensed(g, a);
      if (diffs.empty() && golden.at("digest") != actual.at("digest"))
        diffs.push_back({"digest (a per-component stat changed; the condensed stats agree)",
                         json::serialize(golden.at("digest")),
                         json::serialize(actual.at("digest"))});
    }
    if (opt.bless) {
      fs::create_directories(golden_file.parent_path());
      write_file(golden_file, config::to_pretty_json(actual));
      if (!have_golden)
        fmt::print(out, "{}: new golden {}\n", c.name, golden_file.string());
      else if (diffs.empty())
        fmt::print(out, "{}: unchanged\n", c.name);
      else {
        fmt::print(out, "{}: {} differences, golden rewritten:\n", c.name, diffs.size());
        print_diffs(out, diffs);
      }
      continue;
    }
    if (!have_golden) {
      fmt::print(out, "{}: no golden {} (scripts/bless-goldens.sh writes it)\n", c.name,
                 golden_file.string());
      rc = 1;
    } else if (!diffs.empty()) {
      fmt::print(out, "{}: {} differences from {} (golden -> this run):\n", c.name, diffs.size(),
                 golden_file.string());
      print_diffs(out, diffs);
      rc = 1;
    } else {
      fmt::print(out, "{}: matches its golden\n", c.name);
    }
  }
  fs::remove_all(scratch);
  return rc;
}

}  // namespace podsim::tools
