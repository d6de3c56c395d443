#include "sim/tools/report.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "sim/tools/csv.hpp"
#include "sim/tools/svg.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw ReportError("cannot read " + p.string());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

json::value read_json(const fs::path& p) {
  boost::system::error_code ec;
  json::value v = json::parse(slurp(p), ec);
  if (ec) throw ReportError(p.string() + ": not valid JSON: " + ec.message());
  return v;
}

using Row = CsvRow;
std::vector<Row> read_csv(const fs::path& p) {
  return fs::exists(p) ? parse_csv(slurp(p)) : std::vector<Row>{};
}

double num(const json::value& v) {
  return v.is_double()   ? v.as_double()
         : v.is_int64()  ? static_cast<double>(v.as_int64())
         : v.is_uint64() ? static_cast<double>(v.as_uint64())
                         : 0.0;
}
std::optional<double> to_double(const std::string& s) {
  try {
    std::size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

const json::object* stat(const json::object& stats, const std::string& key) {
  const auto* s = stats.if_contains(key);
  return s ? s->if_object() : nullptr;
}

std::string page(const std::string& title, const std::string& body) {
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{0}</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; max-width: 1100px; }}
h1 {{ font-size: 22px; }} h2 {{ font-size: 17px; margin-top: 28px; }}
table {{ border-collapse: collapse; margin: 8px 0; font-size: 13px; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
th {{ background: #f0f0f0; }} td:first-child, th:first-child {{ text-align: left; }}
.note {{ color: #666; font-size: 13px; }}
svg.plot {{ display: block; margin: 8px 0; }}
</style></head>
<body>
<h1>{0}</h1>
{1}
<script>
// Marks each plot with how many of its marks the browser laid out (a rendering self-check).
window.addEventListener('load', () => {{
  const plots = document.querySelectorAll('svg.plot');
  let drawn = 0;
  plots.forEach(svg => {{
    let n = 0;
    svg.querySelectorAll('path.series, rect.segment, rect.cell, circle').forEach(m => {{
      const b = m.getBBox();
      if (b.width > 0 || b.height > 0) n++;
    }});
    svg.setAttribute('data-drawn', n);
    if (n > 0) drawn++;
  }});
  document.body.setAttribute('data-plots', plots.length);
  document.body.setAttribute('data-plots-drawn', drawn);
}});
</script>
</body></html>
)",
                     svg::escape(title), body);
}

std::string table(const std::vector<std::string>& head,
                  const std::vector<std::vector<std::string>>& rows) {
  std::string t = "<table><tr>";
  for (const auto& h : head)
    t += "<th>" + svg::escape(h) + "</th>";
  t += "</tr>\n";
  for (const auto& r : rows) {
    t += "<tr>";
    for (const auto& c : r)
      t += "<td>" + svg::escape(c) + "</td>";
    t += "</tr>\n";
  }
  return t + "</table>\n";
}

std::string fmt_num(double v) {
  return fmt::format("{:.6g}", v);
}

// ---- a run -------------------------------------------------------------------------------

std::string run_report(const fs::path& dir, std::string& title) {
  const json::value stats_doc = read_json(dir / "stats.json");
  const json::object& stats = stats_doc.at("stats").as_object();
  const json::value run =
      fs::exists(dir / "run.json") ? read_json(dir / "run.json") : json::value();
  title = fmt::format("podsim run: {}", std::string(stats_doc.at("config_name").as_string()));
  std::string body;

  // Identity and headline numbers.
  std::vector<std::vector<std::string>> meta = {
      {"seed", fmt_num(num(stats_doc.at("seed")))},
      {"simulated time", fmt::format("{} ns", fmt_num(num(stats_doc.at("simulated_time_ns"))))},
      {"podsim", std::string(stats_doc.at("podsim_version").as_string())}};
  if (run.is_object()) {
    meta.push_back({"config", std::string(run.at("config_source").as_string())});
    meta.push_back({"finished", run.at("finished").as_bool() ? "yes" : "no"});
    meta.push_back({"failures", std::to_string(run.at("failures").as_array().size())});
    meta.push_back(
        {"invariant violations", std::to_string(run.at("invariant_violations").as_array().size())});
  }
  body += table({"run", ""}, meta);
  std::vector<std::vector<std::string>> head;
  for (const char* k : {"remote_accesses", "achieved_bandwidth", "access_phase_time", "faults",
                        "retries", "payload_efficiency"})
    if (const auto* s = stat(stats, std::string("pod.summary.") + k))
      head.push_back({k, fmt_num(num(s->at("value"))), std::string(s->at("unit").as_string())});
  body += table({"headline", "value", "unit"}, head);

  // Latency by path: the table, and its CDF.
  const auto lat = read_csv(dir / "latency.csv");
  std::vector<std::vector<std::string>> lrows;
  for (const Row& r : lat)
    lrows.push_back({r.at("path"), r.at("count"), r.at("mean_ns"), r.at("p50_ns"), r.at("p90_ns"),
                     r.at("p99_ns"), r.at("p999_ns"), r.at("max_ns")});
  body += "<h2>Latency by path</h2>\n";
  body += table({"path", "count", "mean ns", "p50", "p90", "p99", "p99.9", "max"}, lrows);
  std::map<std::string, std::vector<std::pair<double, double>>> cdf;
  std::map<std::string, double> totals;
  const auto hist = read_csv(dir / "latency_histogram.csv");
  for (const Row& b : hist)
    totals[b.at("path")] += std::stod(b.at("count"));
  std::map<std::string, double> seen;
  for (const Row& b : hist) {
    const std::string& p = b.at("path");
    if (cdf[p].empty()) cdf[p].push_back({std::stod(b.at("lower_ns")), 0.0});
    seen[p] += std::stod(b.at("count"));
    cdf[p].push_back({std::stod(b.at("upper_ns")), seen[p] / totals[p]});
  }
  std::vector<svg::Line> cdf_lines;
  for (const Row& r : lat)  // in the table's order
    if (cdf.count(r.at("path")) && !(r.at("path") == "remote" && lat.size() == 3))
      cdf_lines.push_back({r.at("path"), cdf[r.at("path")]});
  if (!cdf_lines.empty())
    body += svg::line_chart("latency-cdf", "Latency CDF by path", {"latency (ns)", {}},
                            {"fraction of accesses at or below", {}}, cdf_lines, true);
  else
    body += "<p class=note>No completed accesses: no latency CDF.</p>\n";

  // Where the time goes, hop by hop: all GPUs, then each GPU that issued remote accesses.
  body += "<h2>Per-hop breakdown of a remote access</h2>\n";
  std::vector<std::string> parts;
  std::vector<svg::Bar> bars;
  auto add_bar = [&](const std::string& label, const json::object& s) {
    if (num(s.at("samples")) <= 0) return;
    svg::Bar b{label, std::vector<double>(parts.size(), 0.0)};
    for (const auto& [name, mean] : s.at("mean_parts").as_object()) {
      const std::string n(name);
      auto it = std::find(parts.begin(), parts.end(), n);
      if (it == parts.end()) {
        parts.push_back(n);
        for (auto& other : bars)
          other.parts.push_back(0.0);
        b.parts.push_back(0.0);
        it = parts.end() - 1;
      }
      b.parts[static_cast<std::size_t>(it - parts.begin())] = num(mean);
    }
    bars.push_back(std::move(b));
  };
  if (const auto* s = stat(stats, "pod.summary.remote_breakdown")) add_bar("all GPUs", *s);
  std::size_t gpus_shown = 0, gpus = 0;
  for (;; ++gpus) {
    const auto* s = stat(stats, fmt::format("pod.gpu{}.agent.remote_breakdown", gpus));
    if (!s) break;
    if (gpus_shown < 32 && num(s->at("samples")) > 0) {
      add_bar(fmt::format("gpu{}", gpus), *s);
      ++gpus_shown;
    }
  }
  // Parts that are zero everywhere are left out.
  std::vector<std::string> kept;
  std::vector<std::size_t> keep;
  for (std::size_t p = 0; p < parts.size(); ++p)
    if (std::any_of(bars.begin(), bars.end(), [&](const svg::Bar& b) { return b.parts[p] > 0; })) {
      kept.push_back(parts[p]);
      keep.push_back(p);
    }
  for (auto& b : bars) {
    std::vector<double> v;
    for (std::size_t p : keep)
      v.push_back(b.parts[p]);
    b.parts = std::move(v);
  }
  if (!bars.empty()) {
    body += svg::stacked_bars("breakdown", "Mean remote access, hop by hop", "ns", kept, bars);
    if (gpus_shown < gpus)
      body += fmt::format(
          "<p class=note>The first {} GPUs that issued remote accesses are "
          "shown (of {}).</p>\n",
          gpus_shown, gpus);
  } else {
    body += "<p class=note>No remote accesses: no breakdown.</p>\n";
  }

  // Bandwidth over time.
  body += "<h2>Bandwidth over time</h2>\n";
  const auto ts = read_csv(dir / "timeseries.csv");
  // Drawn over the span that had traffic (setup before it can take most of a run), padded.
  std::size_t first = ts.size(), last = 0;
  for (std::size_t i = 0; i < ts.size(); ++i)
    for (const auto& [col, v] : ts[i])
      if (col != "t_ns" && std::stod(v) > 0) {
        first = std::min(first, i);
        last = std::max(last, i);
      }
  std::vector<svg::Line> bw;
  if (first <= last) {
    const std::size_t pad = std::max<std::size_t>(2, (last - first) / 20);
    const std::size_t lo = first > pad ? first - pad : 0;
    const std::size_t hi = std::min(ts.size() - 1, last + pad);
    for (const auto& [col, _] : ts.front())
      if (col != "t_ns") {
        svg::Line l{col.substr(0, col.find('_')), {}};
        for (std::size_t i = lo; i <= hi; ++i)
          l.points.push_back({std::stod(ts[i].at("t_ns")) / 1000.0, std::stod(ts[i].at(col))});
        bw.push_back(std::move(l));
      }
  }
  if (!bw.empty())
    body += svg::line_chart("bandwidth", "Payload bandwidth over time, all GPUs",
                            {"simulated time (us)", {}}, {"GB/s", {}}, bw);
  else
    body += "<p class=note>No accesses completed: no bandwidth to draw.</p>\n";

  // Switch ports: utilisation of each output.
  body += "<h2>Switch-port utilisation</h2>\n";
  static const std::regex port_key(
      R"(pod\.fabric\.(.*(?:switch|leaf|spine)\d+)\.port(\d+)\.utilisation)");
  std::map<std::string, std::vector<double>> util;
  std::vector<std::string> order;
  for (const auto& [k, v] : stats) {
    std::smatch m;
    const std::string key(k);
    if (!std::regex_match(key, m, port_key)) continue;
    const std::string sw = m[1];
    const auto port = static_cast<std::size_t>(std::stoul(m[2]));
    auto [it, fresh] = util.try_emplace(sw);
    if (fresh) order.push_back(sw);
    if (it->second.size() <= port) it->second.resize(port + 1, -1.0);
    it->second[port] = num(v.at("value"));
  }
  std::vector<svg::HeatRow> rows;
  for (const auto& sw : order)
    rows.push_back({sw, util[sw]});
  if (!rows.empty())
    body += svg::heatmap("switch-utilisation", "Switch output-port utilisation", "port", rows);
  else
    body += "<p class=note>No switches in this pod.</p>\n";
  return body;
}

// ---- a sweep -----------------------------------------------------------------------------

std::string sweep_report(const fs::path& dir, std::string& title) {
  const json::value doc = read_json(dir / "sweep.json");
  const auto& vary = doc.at("vary").as_array();
  const auto& points = doc.at("points").as_array();
  const auto& columns = doc.at("columns").as_array();
  std::vector<std::string> keys;
  for (const auto& v : vary)
    keys.emplace_back(v.at("key").as_string());
  title = fmt::format("podsim sweep: {}", fmt::join(keys, " x "));
  std::string body;
  body += fmt::format("<p>{} points; config {}.</p>\n", points.size(),
                      doc.at("config").is_string() ? std::string(doc.at("config").as_string())
                                                   : std::string("(the embedded default pod)"));

  // Each stat against the first varied key; one line per combination of the others.
  const auto& first_values = vary.at(0).at("values").as_array();
  std::vector<std::string> xs;
  for (const auto& v : first_values)
    xs.emplace_back(v.as_string());
  bool numeric_x = true;
  for (const auto& x : xs)
    numeric_x = numeric_x && to_double(x).has_value();
  std::size_t plots = 0;
  for (const auto& c : columns) {
    const std::string col(c.at("column").as_string());
    std::map<std::string, svg::Line> lines;
    std::vector<std::string> line_order;
    std::set<double> distinct;
    for (const auto& pj : points) {
      const auto& p = pj.as_object();
      const auto& v = p.at("stats").at(col);
      if (!v.is_number()) continue;
      std::string others;
      for (std::size_t k = 1; k < keys.size(); ++k)
        others += (others.empty() ? "" : ", ") + keys[k].substr(keys[k].rfind('.') + 1) + "=" +
                  std::string(p.at("values").at(keys[k]).as_string());
      if (others.empty()) others = col;
      const std::string xv(p.at("values").at(keys[0]).as_string());
      const double x = numeric_x
                           ? *to_double(xv)
                           : static_cast<double>(std::find(xs.begin(), xs.end(), xv) - xs.begin());
      auto [it, fresh] = lines.try_emplace(others, svg::Line{others, {}});
      if (fresh) line_order.push_back(others);
      it->second.points.push_back({x, num(v)});
      distinct.insert(num(v));
    }
    if (distinct.size() < 2) continue;  // the same at every point: nothing to draw
    std::vector<svg::Line> ls;
    for (const auto& n : line_order)
      ls.push_back(lines[n]);
    body += fmt::format("<h2>{}</h2>\n", svg::escape(col));
    body += svg::line_chart("sweep-" + col, col + " vs " + keys[0],
                            {keys[0], numeric_x ? std::vector<std::string>{} : xs}, {col, {}}, ls);
    ++plots;
  }
  if (plots == 0) body += "<p class=note>No stat varied across the points.</p>\n";

  // The points.
  std::vector<std::string> head = keys;
  head.push_back("exit");
  for (const auto& c : columns)
    head.emplace_back(c.at("column").as_string());
  std::vector<std::vector<std::string>> rows;
  for (const auto& pj : points) {
    std::vector<std::string> r;
    for (const auto& k : keys)
      r.emplace_back(pj.at("values").at(k).as_string());
    r.push_back(std::to_string(pj.at("exit_code").to_number<int>()));
    for (const auto& c : columns) {
      const auto& v = pj.at("stats").at(c.at("column").as_string());
      r.push_back(v.is_number() ? fmt_num(num(v)) : "");
    }
    rows.push_back(std::move(r));
  }
  body += "<h2>Points</h2>\n" + table(head, rows);
  return body;
}

}  // namespace

int report_command(const ReportOptions& opt, std::ostream& out, std::ostream& err) {
  const fs::path dir(opt.dir);
  const fs::path file = opt.out ? fs::path(*opt.out) : dir / "report.html";
  std::string title, body;
  try {
    if (fs::exists(dir / "sweep.json"))
      body = sweep_report(dir, title);
    else if (fs::exists(dir / "stats.json"))
      body = run_report(dir, title);
    else {
      fmt::print(err,
                 "podsim report: {} holds neither a run's results (stats.json) nor a sweep's "
                 "(sweep.json)\n",
                 dir.string());
      return 2;
    }
  } catch (const std::exception& e) {
    fmt::print(err, "podsim report: {}\n", e.what());
    return 2;
  }
  std::ofstream f(file, std::ios::binary);
  f << page(title, body);
  if (!f.flush()) {
    fmt::print(err, "podsim report: cannot write {}\n", file.string());
    return 1;
  }
  fmt::print(out, "wrote {}\n", file.string());
  return 0;
}

}  // namespace podsim::tools
