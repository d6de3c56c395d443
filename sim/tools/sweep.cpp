#include "sim/tools/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "sim/core/config_io.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/files.hpp"
#include "sim/core/json_write.hpp"
#include "sim/pod/pod_config_io.hpp"
#include "sim/pod/workload_files.hpp"
#include "sim/tools/mpi_world.hpp"
#include "sim/tools/process_pool.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

// Levenshtein distance, for suggestions.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1] ? 1u : 0u)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "; did you mean X, Y?" with the closest of `known` (up to 3, within a quarter of the
// key's length), or nothing.
std::string did_you_mean(const std::string& key, const std::vector<std::string>& known) {
  std::vector<std::pair<std::size_t, std::string>> near;
  const std::size_t limit = std::max<std::size_t>(2, key.size() / 4);
  for (const auto& k : known)
    if (const std::size_t d = edit_distance(key, k); d <= limit) near.emplace_back(d, k);
  std::sort(near.begin(), near.end());
  if (near.empty()) return "";
  std::vector<std::string> names;
  for (std::size_t i = 0; i < near.size() && i < 3; ++i)
    names.push_back(near[i].second);
  return fmt::format("; did you mean {}?", fmt::join(names, ", "));
}

}  // namespace

Vary parse_vary(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument("--vary " + text + ": expected key.path=v1,v2,...");
  Vary v{text.substr(0, eq), {}};
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (std::size_t i = eq + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\' && i + 1 < text.size()) {
        cur += c;
        cur += text[++i];
        continue;
      }
      if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      --depth;
    } else if (c == ',' && depth == 0) {
      v.values.push_back(cur);
      cur.clear();
      continue;
    }
    cur += c;
  }
  v.values.push_back(cur);
  for (const auto& x : v.values)
    if (x.empty())
      throw std::invalid_argument("--vary " + text + ": an empty value (two commas in a row?)");
  return v;
}

const std::vector<Headline>& headline_stats() {
  static const std::vector<Headline> h = {
      {"remote_accesses", "pod.summary.remote_accesses", "value"},
      {"remote_latency_mean_ns", "pod.summary.measured.remote_latency", "mean"},
      {"remote_latency_p50_ns", "pod.summary.measured.remote_latency", "p50"},
      {"remote_latency_p90_ns", "pod.summary.measured.remote_latency", "p90"},
      {"remote_latency_p99_ns", "pod.summary.measured.remote_latency", "p99"},
      {"remote_latency_p999_ns", "pod.summary.measured.remote_latency", "p999"},
      {"achieved_bandwidth_GBps", "pod.summary.measured.achieved_bandwidth", "value"},
      {"measured_window_ns", "pod.summary.measured.window_time", "value"},
      {"access_phase_time_ns", "pod.summary.access_phase_time", "value"},
      {"faults", "pod.summary.faults", "value"},
      {"retries", "pod.summary.retries", "value"},
      {"import_time_mean_ns", "pod.summary.import_time", "mean"},
      {"revoke_time_mean_ns", "pod.summary.revoke_time", "mean"},
      {"revoke_time_p99_ns", "pod.summary.revoke_time", "p99"},
      {"payload_efficiency", "pod.summary.payload_efficiency", "value"},
      {"invariant_violations", "pod.summary.invariant_violations", "value"},
  };
  return h;
}

namespace {

constexpr int kPointTag = 7;
constexpr int kGridTag = 8;  // rank 0's grid digest, to each rank
constexpr int kWhyTag = 10;  // what a rank that refused the sweep printed, to rank 0

// Under mpirun, the ranks agree whether any refused the sweep (`code` nonzero: this one did, and
// has printed why). Returns 0 if none did, else the code to exit with. When rank 0 did not
// refuse, it names the last rank that did and prints what that rank said (the other ranks are
// silenced); when it did, its own message stands for all.
int agree_on_refusals(int code, std::ostream& err) {
  if (!MpiWorld::launched()) return code;
  const int last = MpiWorld::max_all(code ? MpiWorld::rank() + 1 : 0) - 1;
  if (last < 0) return 0;
  if (last != 0 && MpiWorld::rank() == last) MpiWorld::send(0, kWhyTag, MpiWorld::silenced());
  if (last != 0 && MpiWorld::rank() == 0) {
    const std::string said = MpiWorld::receive(last, kWhyTag);
    if (code) return code;
    fmt::print(err,
               "podsim sweep: rank {} of {}{} refused the sweep where rank 0 did not (every "
               "rank must run the same command with the same files){}{}\n",
               last, MpiWorld::size(), last > 1 ? " (at least)" : "",
               said.empty() ? "" : ", saying: ", said);
  }
  return code ? code : 2;
}
std::string slurp(const fs::path& p);

// A point's result and every file it wrote (points/NNN/..., NNN.stdout, NNN.stderr), as one
// byte string for MPI: u64 point, i32 exit code, i32 signal, i64 peak RSS, u32 files, then per
// file its path (u32 length, bytes, relative to points/) and content (u64 length, bytes).
template <class T>
void put(std::string& b, T v) {
  b.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T take(const std::string& b, std::size_t& at) {
  if (at + sizeof(T) > b.size()) throw std::runtime_error("sweep: a truncated point message");
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

std::string pack_point(std::size_t i, const ChildResult& r, const fs::path& points_dir) {
  std::vector<fs::path> files;
  const std::string stem = fmt::format("{:03}", i);
  for (const char* ext : {".stdout", ".stderr"})
    if (fs::is_regular_file(points_dir / (stem + ext))) files.push_back(stem + ext);
  if (fs::is_directory(points_dir / stem))
    for (const auto& e : fs::recursive_directory_iterator(points_dir / stem))
      if (e.is_regular_file()) files.push_back(fs::relative(e.path(), points_dir));
  std::sort(files.begin(), files.end());
  std::string b;
  put<std::uint64_t>(b, i);
  put<std::int32_t>(b, r.exit_code);
  put<std::int32_t>(b, r.signal);
  put<std::uint8_t>(b, fs::is_directory(points_dir / stem) ? 1 : 0);  // even an empty one
  put<std::uint32_t>(b, static_cast<std::uint32_t>(files.size()));
  for (const auto& f : files) {
    const std::string path = f.generic_string(), text = slurp(points_dir / f);
    put<std::uint32_t>(b, static_cast<std::uint32_t>(path.size()));
    b += path;
    put<std::uint64_t>(b, text.size());
    b += text;
  }
  return b;
}

// Writes a packed point's files under `points_dir` and its result into `results`; its index.
std::size_t unpack_point(const std::string& b, const fs::path& points_dir, std::size_t count,
                         std::vector<ChildResult>& results) {
  std::size_t at = 0;
  const auto i = take<std::uint64_t>(b, at);
  if (i >= count) throw std::runtime_error("sweep: a point message for no point");
  ChildResult& r = results[i];
  r.exit_code = take<std::int32_t>(b, at);
  r.signal = take<std::int32_t>(b, at);
  if (take<std::uint8_t>(b, at)) fs::create_directories(points_dir / fmt::format("{:03}", i));
  const auto files = take<std::uint32_t>(b, at);
  for (std::uint32_t f = 0; f < files; ++f) {
    const auto plen = take<std::uint32_t>(b, at);
    if (at + plen > b.size()) throw std::runtime_error("sweep: a truncated point message");
    const fs::path rel = fs::path(b.substr(at, plen)).lexically_normal();
    at += plen;
    const auto tlen = take<std::uint64_t>(b, at);
    if (at + tlen > b.size()) throw std::runtime_error("sweep: a truncated point message");
    if (rel.is_absolute() || *rel.begin() == "..")
      throw std::runtime_error("sweep: a point file outside points/: " + rel.string());
    fs::create_directories((points_dir / rel).parent_path());
    write_file(points_dir / rel, std::string_view(b).substr(at, tlen));
    at += tlen;
  }
  return static_cast<std::size_t>(i);
}

struct Column {
  std::string name, stat, field;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Readable numbers: integers as integers, others with up to 9 significant digits.
std::string number_text(const json::value& v) {
  if (v.is_int64()) return std::to_string(v.as_int64());
  if (v.is_uint64()) return std::to_string(v.as_uint64());
  if (v.is_double()) return fmt::format("{:.9g}", v.as_double());
  return json::serialize(v);
}

}  // namespace

int sweep_command(const SweepOptions& opt, std::ostream& out, std::ostream& err) {
  // Under mpirun a rank that refuses the sweep tells the others (who would wait for it at the
  // agreement below): it takes part in that agreement, as a refusal, and goes.
  auto refuse = [&err](int code) { return agree_on_refusals(code, err); };
  if (opt.vary.empty()) {
    fmt::print(err, "podsim sweep: nothing to vary (give --vary key.path=v1,v2,...)\n");
    return refuse(2);
  }
  // The sweep's directory: its files and points/ are replaced there, so never the current
  // directory by an empty name, nor a file.
  if (std::error_code ec;
      opt.out_dir.empty() || (fs::exists(opt.out_dir, ec) && !fs::is_directory(opt.out_dir, ec))) {
    fmt::print(err, "podsim sweep: --out {}: {}\n", opt.out_dir.empty() ? "\"\"" : opt.out_dir,
               opt.out_dir.empty() ? "an empty name (give a directory)" : "is not a directory");
    return refuse(2);
  }
  // A key varied twice (or inside another varied key, or also --set) would leave one of the
  // two settings silently unused: the grid would name values no point ran with.
  {
    for (std::size_t a = 0; a < opt.vary.size(); ++a)
      for (std::size_t b = a + 1; b < opt.vary.size(); ++b)
        if (config::paths_overlap(opt.vary[a].key, opt.vary[b].key)) {
          fmt::print(err, "podsim sweep: --vary {} and --vary {}: the same setting varied twice\n",
                     opt.vary[a].key, opt.vary[b].key);
          return refuse(2);
        }
    std::vector<std::pair<std::string, std::string>> fixed;  // the option, the key it fixes
    for (const std::string& set : opt.overrides) {
      const std::string key = set.substr(0, set.find('='));
      fixed.emplace_back("--set " + key, key);
    }
    if (opt.seed) fixed.emplace_back("--seed", "seed");  // the key `seed`, at every point
    for (const auto& [option, key] : fixed) {
      for (const Vary& v : opt.vary)
        if (config::paths_overlap(key, v.key)) {
          fmt::print(err,
                     "podsim sweep: {} and --vary {}: the same setting both fixed and varied\n",
                     option, v.key);
          return refuse(2);
        }
    }
  }
  // A value given twice would make two rows of one point; a --stat twice, two equal columns.
  for (const Vary& v : opt.vary)
    for (std::size_t a = 0; a < v.values.size(); ++a)
      if (std::find(v.values.begin() + static_cast<std::ptrdiff_t>(a) + 1, v.values.end(),
                    v.values[a]) != v.values.end()) {
        fmt::print(err, "podsim sweep: --vary {}: the value {} is given twice\n", v.key,
                   v.values[a]);
        return refuse(2);
      }
  for (std::size_t a = 0; a < opt.extra_stats.size(); ++a)
    if (std::find(opt.extra_stats.begin() + static_cast<std::ptrdiff_t>(a) + 1,
                  opt.extra_stats.end(), opt.extra_stats[a]) != opt.extra_stats.end()) {
      fmt::print(err, "podsim sweep: --stat {} is given twice\n", opt.extra_stats[a]);
      return refuse(2);
    }
  // `--vary config=a.json,b.json` varies the config file itself (not a key in it).
  std::optional<std::size_t> config_axis;
  for (std::size_t k = 0; k < opt.vary.size(); ++k)
    if (opt.vary[k].key == "config") config_axis = k;
  if (config_axis && opt.config_path) {
    fmt::print(err,
               "podsim sweep: a config file ({}) and --vary config=...: give the configs one "
               "way\n",
               *opt.config_path);
    return refuse(2);
  }
  // The grid, first --vary outermost.
  std::vector<std::vector<std::string>> points{{}};
  for (const Vary& v : opt.vary) {
    std::vector<std::vector<std::string>> next;
    for (const auto& p : points)
      for (const auto& x : v.values) {
        auto q = p;
        q.push_back(x);
        next.push_back(std::move(q));
      }
    points = std::move(next);
  }
  auto assignments = [&](const std::vector<std::string>& p) {
    std::vector<std::string> a = opt.overrides;
    for (std::size_t k = 0; k < p.size(); ++k)
      if (k != config_axis) a.push_back(opt.vary[k].key + "=" + p[k]);
    return a;
  };
  auto config_of = [&](const std::vector<std::string>& p) -> std::optional<std::string> {
    if (config_axis) return p[*config_axis];
    return opt.config_path;
  };
  // Every point's config, and the files it names (traces), checked before anything runs or is
  // written, as `podsim run` checks them (each file once for each pod size it is read for).
  std::set<std::string> files_checked;
  for (std::size_t i = 0; i < points.size(); ++i) {
    std::vector<std::string> what = assignments(points[i]);
    if (config_axis) what.insert(what.begin(), "config=" + points[i][*config_axis]);
    try {
      PodConfig cfg = load_pod_config(config_of(points[i]), assignments(points[i]));
      const auto& w = cfg.workload;
      const std::string key =
          fmt::format("{}\n{}\n{}\n{}\n{}\n{}", config_of(points[i]).value_or(""), w.traffic.trace,
                      w.kind == WorkloadKind::Model ? w.model : "", w.model_groups, cfg.pod.gpus,
                      w.collective.chunk_size.count());
      if ((!w.traffic.trace.empty() || w.kind == WorkloadKind::Model) &&
          files_checked.insert(key).second)
        (void)resolve_workload_files(cfg, config_of(points[i]), assignments(points[i]));
    } catch (const config::ConfigError& e) {
      fmt::print(err, "podsim sweep: config error at point {} ({}): {}\n", i, fmt::join(what, " "),
                 e.what());
      return refuse(2);
    } catch (const std::invalid_argument& e) {
      fmt::print(err, "podsim sweep: at point {} ({}): {}\n", i, fmt::join(what, " "), e.what());
      return refuse(2);
    }
  }
  std::vector<Column> columns;
  for (const auto& h : headline_stats())
    columns.push_back({h.column, h.stat, h.field});
  for (const auto& e : opt.extra_stats) {
    const auto colon = e.find(':');
    const std::string stat = e.substr(0, colon);
    const std::string field = colon == std::string::npos ? "value" : e.substr(colon + 1);
    columns.push_back({colon == std::string::npos ? stat : stat + ":" + field, stat, field});
  }

  std::vector<std::string> table = opt.table_columns;
  if (table.empty()) {
    table = {"remote_latency_mean_ns", "remote_latency_p99_ns", "achieved_bandwidth_GBps"};
    for (std::size_t c = headline_stats().size(); c < columns.size(); ++c)
      table.push_back(columns[c].name);
  }
  for (const auto& t : table)
    if (std::none_of(columns.begin(), columns.end(),
                     [&](const Column& c) { return c.name == t; })) {
      std::string headline;  // the first columns are the headline ones
      for (std::size_t c = 0; c < headline_stats().size(); ++c)
        headline += (c ? ", " : "") + columns[c].name;
      fmt::print(err,
                 "podsim sweep: --table {}: not a column (the headline columns are {}; "
                 "add others with --stat)\n",
                 t, headline);
      return refuse(2);
    }

  // A rank other than 0 runs its points in a scratch directory of its own (their files go to
  // rank 0 to be written): one that cannot make it refuses the sweep too, before anything runs.
  const int ranks = MpiWorld::size(), me = MpiWorld::rank();
  const fs::path dir(opt.out_dir);
  fs::path points_dir = dir / "points";
  struct Staging {  // a rank's scratch directory goes when this function is left, by an error too
    fs::path dir;
    ~Staging() {
      std::error_code ignored;
      if (!dir.empty()) fs::remove_all(dir, ignored);
    }
  } staging;
  if (me != 0) {
    std::error_code ec;
    const fs::path tmp = fs::temp_directory_path(ec);
    if (!ec) {
      points_dir = tmp / fmt::format("podsim-sweep-{}-rank{}", ::getpid(), me) / "points";
      staging.dir = points_dir.parent_path();
      fs::create_directories(points_dir, ec);
    }
    if (ec) {
      const char* tmpdir = std::getenv("TMPDIR");
      fmt::print(err,
                 "podsim sweep: cannot make this rank's scratch directory in the temporary "
                 "directory ({}): {}\n",
                 tmpdir ? fmt::format("TMPDIR={}", tmpdir) : std::string("/tmp"), ec.message());
      return refuse(2);
    }
  }

  // Under mpirun every rank must sweep the same grid: each starts from its own command line
  // (an MPMD launch can give them different ones) and reads its own config files (which can
  // differ between hosts). The ranks first agree that none refused the sweep (above); then
  // each compares what it would run with rank 0's before anything runs.
  if (MpiWorld::launched()) {
    if (const int refused = agree_on_refusals(0, err)) return refused;
    Digest d;
    for (const auto& p : points) {
      const auto c = config_of(p);
      d.add(c ? slurp(*c) : std::string("(the embedded default)"));
      for (const auto& a : assignments(p))
        d.add(a);
    }
    d.add(opt.seed ? 1 : 0).add(opt.seed.value_or(0)).add(opt.warnings_as_errors ? 1 : 0);
    for (const auto& t : table)
      d.add(t);
    for (const auto& c : columns)
      d.add(c.name);
    const std::string mine = std::to_string(d.value());
    if (MpiWorld::rank() == 0)
      for (int r = 1; r < MpiWorld::size(); ++r)
        MpiWorld::send(r, kGridTag, mine);
    const bool differs = MpiWorld::rank() != 0 && MpiWorld::receive(0, kGridTag) != mine;
    if (const int last = MpiWorld::max_all(differs ? MpiWorld::rank() : 0); last != 0) {
      if (MpiWorld::rank() == 0)
        fmt::print(err,
                   "podsim sweep: rank {} of {} (at least) would sweep another grid than rank 0 "
                   "(other configs, files or options): every rank must run the same command "
                   "with the same files\n",
                   last, MpiWorld::size());
      return 2;
    }
  }

  const std::string self = self_executable();
  // Point i's run, its outputs under `points` (points/NNN/, NNN.stdout, NNN.stderr).
  auto job_of = [&](std::size_t i, const fs::path& points_dir) {
    const fs::path pdir = points_dir / fmt::format("{:03}", i);
    ChildJob j;
    j.argv = {self, "run"};
    if (const auto c = config_of(points[i])) j.argv.push_back(*c);
    for (const auto& s : assignments(points[i])) {
      j.argv.push_back("--set");
      j.argv.push_back(s);
    }
    if (opt.seed) {
      j.argv.push_back("--seed");
      j.argv.push_back(std::to_string(*opt.seed));
    }
    if (opt.warnings_as_errors) j.argv.push_back("--warnings-as-errors");
    j.argv.insert(j.argv.end(), {"--quiet", "--out", pdir.string()});
    j.stdout_path = (points_dir / fmt::format("{:03}.stdout", i)).string();
    j.stderr_path = (points_dir / fmt::format("{:03}.stderr", i)).string();
    return j;
  };
  // Under mpirun the points are dealt out over the ranks (point i to rank i mod ranks), each
  // rank running its own `-j` at a time; the other ranks send their points' files to rank 0,
  // which writes everything as one machine would.
  // What an earlier sweep left in DIR goes first, so a sweep that fails part way never leaves
  // a set of sweep files that look like its own.
  if (me == 0) {
    for (const char* f : {"sweep.csv", "sweep.json", "sweep.md"})
      fs::remove(dir / f);
    fs::remove_all(dir / "points");
    fs::create_directories(points_dir);
  }
  std::vector<std::size_t> mine;
  std::vector<ChildJob> jobs;
  for (std::size_t i = 0; i < points.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(ranks)) == me) {
      mine.push_back(i);
      jobs.push_back(job_of(i, points_dir));
    }
  // Progress counts every point of the sweep (rank 0 prints the others' as they arrive).
  auto ended = [](const ChildResult& r) {
    return r.signal ? fmt::format("killed by signal {}", r.signal)
                    : fmt::format("exit {}", r.exit_code);
  };
  std::size_t done = 0;
  const auto ran = run_children(jobs, opt.jobs, [&](std::size_t k, const ChildResult& r) {
    ++done;
    if (!opt.quiet && me == 0)
      fmt::print(err, "[{}/{}] point {:03} ({}) {}\n", done, points.size(), mine[k],
                 fmt::join(points[mine[k]], ", "), ended(r));
  });
  std::vector<ChildResult> results(points.size());
  for (std::size_t k = 0; k < mine.size(); ++k)
    results[mine[k]] = ran[k];
  if (me != 0) {
    for (std::size_t k = 0; k < mine.size(); ++k)
      MpiWorld::send(0, kPointTag, pack_point(mine[k], ran[k], points_dir));
    return 0;
  }
  for (std::size_t n = mine.size(); n < points.size(); ++n) {
    int from = 0;
    const std::size_t i =
        unpack_point(MpiWorld::receive(-1, kPointTag, &from), points_dir, points.size(), results);
    if (!opt.quiet)
      fmt::print(err, "[{}/{}] point {:03} ({}) {}, from rank {}\n", ++done, points.size(), i,
                 fmt::join(points[i], ", "), ended(results[i]), from);
  }

  // One row per point, in grid order.
  std::string csv;
  for (const auto& v : opt.vary)
    csv += csv_cell(v.key) + ",";
  csv += "exit_code";
  for (const auto& c : columns)
    csv += "," + csv_cell(c.name);
  csv += ",warnings\n";
  json::array rows;
  std::size_t failed_points = 0;
  // Whether some point's stats.json has each column's stat and field (a --stat that none has
  // is a mistake, said below), and what the points' stats.json files hold, for suggestions.
  std::vector<bool> present(columns.size(), false);
  bool any_warnings = false;
  std::vector<std::string> known;
  std::map<std::string, std::vector<std::string>> fields;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const int code = results[i].exit_code;
    failed_points += code != 0;
    json::object row;
    row["point"] = i;
    row["dir"] = fmt::format("points/{:03}", i);
    json::object values;
    for (std::size_t k = 0; k < opt.vary.size(); ++k) {
      values[opt.vary[k].key] = points[i][k];
      csv += csv_cell(points[i][k]) + ",";
    }
    row["values"] = std::move(values);
    row["exit_code"] = code;
    if (results[i].signal != 0) row["signal"] = results[i].signal;  // killed: exit_code -1
    csv += std::to_string(code);
    json::object stats;
    const fs::path sfile = dir / "points" / fmt::format("{:03}", i) / "stats.json";
    json::value sj;
    if (fs::exists(sfile)) sj = json::parse(slurp(sfile));
    if (sj.is_object() && known.empty())
      for (const auto& kv : sj.at("stats").as_object()) {
        known.emplace_back(kv.key());
        if (kv.value().is_object())
          for (const auto& f : kv.value().as_object())
            fields[known.back()].emplace_back(f.key());
      }
    for (std::size_t ci = 0; ci < columns.size(); ++ci) {
      const Column& c = columns[ci];
      const json::value* v = nullptr;
      if (sj.is_object())
        if (const auto* s = sj.at("stats").as_object().if_contains(c.stat))
          if (s->is_object()) {
            v = s->as_object().if_contains(c.field);
            if (v) present[ci] = true;
            // A distribution with no samples has no mean or percentile: no cell, not 0.
            const json::value* n = s->as_object().if_contains("count");
            if (v && c.field != "count" && n && n->is_number() && n->to_number<double>() == 0)
              v = nullptr;
          }
      csv += "," + (v ? csv_cell(number_text(*v)) : std::string());
      stats[c.name] = v ? *v : json::value(nullptr);
    }
    row["stats"] = std::move(stats);
    // The point's warnings (run.json): what its numbers do not measure as they seem to.
    json::array warns;
    const fs::path rfile = dir / "points" / fmt::format("{:03}", i) / "run.json";
    if (fs::exists(rfile)) {
      const json::value rj = json::parse(slurp(rfile));
      if (const auto* w = rj.as_object().if_contains("warnings"); w && w->is_array())
        for (const auto& x : w->as_array())
          if (x.is_object())
            if (const auto* c = x.as_object().if_contains("code"); c && c->is_string())
              warns.push_back(*c);
    }
    any_warnings = any_warnings || !warns.empty();
    std::string codes;
    for (const auto& w : warns)
      codes += (codes.empty() ? "" : " ") + std::string(w.as_string());
    csv += "," + csv_cell(codes) + "\n";
    row["warnings"] = std::move(warns);
    rows.push_back(std::move(row));
  }
  // A --stat that no point has: a typo or a field that is not there. Said like a config key's
  // error (exit 2, the tables not written; the points' runs stay in DIR/points).
  for (std::size_t ci = headline_stats().size(); ci < columns.size(); ++ci) {
    if (present[ci] || known.empty()) continue;
    const Column& c = columns[ci];
    if (const auto f = fields.find(c.stat); f != fields.end()) {
      fmt::print(err, "podsim sweep: --stat {}: {} has no field '{}' (it has: {})\n", c.name,
                 c.stat, c.field, fmt::join(f->second, ", "));
    } else {
      fmt::print(err, "podsim sweep: --stat {}: no point's stats.json has a stat {}{}\n", c.name,
                 c.stat, did_you_mean(c.stat, known));
    }
    fmt::print(err,
               "podsim sweep: nothing written but the points' runs, in {} (their stats.json "
               "list every stat)\n",
               (dir / "points").string());
    return 2;
  }
  json::object doc;
  doc["config"] = opt.config_path ? json::value(*opt.config_path) : json::value(nullptr);
  json::array set;
  for (const auto& s : opt.overrides)
    set.emplace_back(s);
  doc["set"] = std::move(set);
  json::array vary;
  for (const auto& v : opt.vary) {
    json::array vals;
    for (const auto& x : v.values)
      vals.emplace_back(x);
    vary.push_back(json::object{{"key", v.key}, {"values", std::move(vals)}});
  }
  doc["vary"] = std::move(vary);
  json::array cols;
  for (const auto& c : columns)
    cols.push_back(json::object{{"column", c.name}, {"stat", c.stat}, {"field", c.field}});
  doc["columns"] = std::move(cols);
  doc["points"] = std::move(rows);
  // The Markdown table: short key names, chosen columns, 4 significant digits. When a point
  // failed, a last column says which (its numbers are not the results of the run as
  // configured, though a study may want them: an isolation breach is a failure).
  std::string md = "|";
  for (const auto& v : opt.vary)
    md += " " + v.key.substr(v.key.rfind('.') + 1) + " |";
  for (const auto& t : table)
    md += " " + t + " |";
  if (failed_points) md += " result |";
  if (any_warnings) md += " warnings |";
  md += "\n|";
  for (std::size_t k = 0;
       k < opt.vary.size() + table.size() + (failed_points ? 1 : 0) + (any_warnings ? 1 : 0); ++k)
    md += "---|";
  md += "\n";
  for (const auto& row : doc["points"].as_array()) {
    md += "|";
    for (const auto& v : opt.vary)
      md += " " + std::string(row.at("values").at(v.key).as_string()) + " |";
    for (const auto& t : table) {
      const auto& v = row.at("stats").at(t);
      md += " " +
            (v.is_double()   ? fmt::format("{:.4g}", v.as_double())
             : v.is_number() ? number_text(v)
                             : std::string("-")) +
            " |";
    }
    if (failed_points) {
      const int code = row.at("exit_code").to_number<int>();
      md += row.as_object().contains("signal")
                ? fmt::format(" FAILED (killed by signal {}) |", row.at("signal").to_number<int>())
            : code ? fmt::format(" FAILED (exit {}) |", code)
                   : std::string(" ok |");
    }
    if (any_warnings) {
      std::string w;
      for (const auto& c : row.at("warnings").as_array())
        w += (w.empty() ? "" : ", ") + std::string(c.as_string());
      md += " " + (w.empty() ? std::string("-") : w) + " |";
    }
    md += "\n";
  }
  if (any_warnings)
    md +=
        "\nwarnings: what a point's numbers do not measure as they seem to (points/NNN/run.json "
        "\"warnings\" says it in words).\n";
  if (failed_points)
    md += fmt::format(
        "\n{} point(s) FAILED: their numbers are not the results of the run as configured "
        "(points/NNN/run.json says why, or points/NNN.stderr where the run wrote none).\n",
        failed_points);
  try {
    write_file(dir / "sweep.md", md);
    write_file(dir / "sweep.csv", csv);
    write_file(dir / "sweep.json", config::to_pretty_json(doc));
  } catch (const std::runtime_error& e) {  // a full disk, a directory gone: said plainly
    for (const char* f : {"sweep.csv", "sweep.json", "sweep.md"}) {
      std::error_code ignored;
      fs::remove(dir / f, ignored);  // all three or none
    }
    fmt::print(err, "podsim sweep: {}\n", e.what());
    return 1;
  }
  if (!opt.quiet) {
    fmt::print(out, "{}\n{} points, {} failed; wrote {}, {} and {}\n", md, points.size(),
               std::count_if(results.begin(), results.end(),
                             [](const ChildResult& r) { return r.exit_code != 0; }),
               (dir / "sweep.csv").string(), (dir / "sweep.json").string(),
               (dir / "sweep.md").string());
  }
  return failed_points ? 1 : 0;
}

}  // namespace podsim::tools
