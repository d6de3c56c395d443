#include "sim/tools/report.hpp"

#include "sim/core/config_io.hpp"
#include "sim/core/files.hpp"
#include "sim/core/units.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "sim/tools/svg.hpp"

namespace podsim::tools {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

struct ReportError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The line (from 1) that byte `at` of `text` is on.
std::ptrdiff_t line_at(const std::string& text, std::size_t at) {
  return 1 + std::count(text.begin(),
                        text.begin() + static_cast<std::ptrdiff_t>(std::min(at, text.size())),
                        '\n');
}

// A file podsim wrote, whole; a directory, or a NUL byte (never in what podsim writes), is an
// error naming it.
std::string slurp(const fs::path& p) {
  std::error_code ec;
  if (fs::is_directory(p, ec)) throw ReportError(p.string() + ": is a directory, not a file");
  // What podsim writes is a regular file (a FIFO would wait for a writer, /dev/zero not end),
  // and text (the read stops at a NUL byte, or past 4 GiB).
  if (fs::exists(p, ec) && !fs::is_regular_file(p, ec))
    throw ReportError(p.string() + ": not a regular file: not a file podsim wrote");
  try {
    return read_text_file(p, std::size_t{4} << 30);
  } catch (const std::runtime_error& e) {
    throw ReportError(std::string(e.what()) + ": not a file podsim wrote");
  }
}

// A JSON document podsim wrote, read with every lookup checked: what is missing or of the
// wrong kind is an error naming the file and the key path.
class J {
 public:
  J(const json::value& v, std::shared_ptr<const std::string> file, std::string path)
      : v_(&v), file_(std::move(file)), path_(std::move(path)) {}
  J at(std::string_view key) const {
    const json::object& o = obj();
    const json::value* c = o.if_contains(key);
    if (!c) fail(fmt::format("has no \"{}\"", key));
    return J(*c, file_, child(key));
  }
  bool contains(std::string_view key) const {
    return v_->is_object() && v_->get_object().contains(key);
  }
  std::vector<J> items() const {
    if (!v_->is_array()) fail("is not an array");
    std::vector<J> out;
    std::size_t i = 0;
    for (const auto& e : v_->get_array())
      out.emplace_back(e, file_, fmt::format("{}[{}]", path_, i++));
    return out;
  }
  std::vector<std::pair<std::string, J>> members() const {
    std::vector<std::pair<std::string, J>> out;
    for (const auto& [k, e] : obj())
      out.emplace_back(std::string(k), J(e, file_, child(k)));
    return out;
  }
  bool is_number() const { return v_->is_number(); }
  bool is_null() const { return v_->is_null(); }
  bool is_string() const { return v_->is_string(); }
  // Every number podsim writes is finite and at least 0.
  double num() const {
    if (!v_->is_number()) fail("is not a number");
    const double d = v_->to_number<double>();
    if (!std::isfinite(d) || d < 0) fail(fmt::format("is {}: not a value podsim writes", d));
    return d;
  }
  std::string str() const {
    if (!v_->is_string()) fail("is not a string");
    return std::string(v_->get_string());
  }
  bool boolean() const {
    if (!v_->is_bool()) fail("is not true or false");
    return v_->get_bool();
  }
  const json::object& obj() const {
    if (!v_->is_object()) fail("is not an object");
    return v_->get_object();
  }

 private:
  // A key with dots in it (a stat's path) is shown as ["key"].
  std::string child(std::string_view key) const {
    if (key.find('.') != std::string_view::npos) return fmt::format("{}[\"{}\"]", path_, key);
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw ReportError(
        fmt::format("{}: {} {}", *file_, path_.empty() ? "the document" : path_, what));
  }
  const json::value* v_;
  std::shared_ptr<const std::string> file_;
  std::string path_;
};

// A JSON file and its root; a syntax error names the line.
struct JsonFile {
  json::value doc;
  std::shared_ptr<const std::string> name;
  J root() const { return J(doc, name, ""); }
};
JsonFile read_json(const fs::path& p) {
  const std::string text = slurp(p);
  json::stream_parser parser;
  boost::system::error_code ec;
  const std::size_t used = parser.write(text.data(), text.size(), ec);
  if (!ec) parser.finish(ec);
  if (ec) {
    throw ReportError(
        fmt::format("{}:{}: not valid JSON: {}", p.string(), line_at(text, used), ec.message()));
  }
  if (const auto d = config::find_duplicate_key(text)) {  // the parser would keep the last
    throw ReportError(
        fmt::format("{}:{}: the key \"{}\" appears twice in one object (first at line {})",
                    p.string(), line_at(text, d->second), d->key, line_at(text, d->first)));
  }
  return {parser.release(), std::make_shared<const std::string>(p.string())};
}

// A CSV file podsim wrote (a header line, no quoted commas), read with every cell checked: a
// row of the wrong width, a missing column or a number that is not one is an error naming
// the file and the line. A file that is not there reads as no rows.
class Csv {
 public:
  explicit Csv(const fs::path& p) : file_(p.string()) {
    if (!fs::exists(p)) return;
    std::istringstream in(slurp(p));
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF, as a spreadsheet saves
      if (line_no == 1 && line.rfind("# podsim: ", 0) == 0) {     // a failed run's CSV
        failed_ = true;
        ++header_line_;
        continue;
      }
      std::vector<std::string> cells;
      std::istringstream l(line);
      for (std::string c; std::getline(l, c, ',');)
        cells.push_back(c);
      if (!line.empty() && line.back() == ',') cells.emplace_back();
      if (line_no == header_line_) {
        head_ = std::move(cells);
        continue;
      }
      if (line.empty()) continue;
      if (cells.size() != head_.size())
        throw ReportError(fmt::format("{}:{}: {} field(s), the header has {}", file_, line_no,
                                      cells.size(), head_.size()));
      rows_.push_back(std::move(cells));
      lines_.push_back(line_no);
    }
    if (line_no < header_line_) throw ReportError(file_ + ": empty (no header line)");
  }
  // The file says its run failed (its first line).
  bool failed() const { return failed_; }
  std::size_t size() const { return rows_.size(); }
  const std::vector<std::string>& head() const { return head_; }
  // The column's index; an error if the header lacks it (and there are rows to read).
  std::size_t col(const std::string& name) const {
    const auto it = std::find(head_.begin(), head_.end(), name);
    if (it == head_.end())
      throw ReportError(
          fmt::format("{}:{}: no column \"{}\" in the header", file_, header_line_, name));
    return static_cast<std::size_t>(it - head_.begin());
  }
  const std::string& text(std::size_t row, std::size_t col) const { return rows_[row][col]; }
  // A plain decimal of at least 0, as podsim writes them (no sign, blank, hex or "inf").
  double num(std::size_t row, std::size_t col) const {
    const std::string& c = rows_[row][col];
    static const std::regex plain(R"([0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
    std::size_t used = 0;
    double d = 0;
    try {
      if (std::regex_match(c, plain)) d = std::stod(c, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (c.empty() || used != c.size() || !std::isfinite(d))
      throw ReportError(fmt::format("{}:{}: column \"{}\": \"{}\" is not a number", file_,
                                    lines_[row], head_[col], c));
    return d;
  }

 private:
  std::string file_;
  std::vector<std::string> head_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> lines_;
  std::size_t header_line_ = 1;
  bool failed_ = false;
};

std::optional<double> to_double(const std::string& s) {
  try {
    std::size_t used = 0;
    const double d = std::stod(s, &used);
    if (used == s.size()) return d;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

std::string fmt_num(double v);

// A run's latency.csv (a table row per path) and latency_histogram.csv (a CDF per path).
struct LatencyData {
  std::vector<std::string> paths;  // in the table's order
  std::vector<std::vector<std::string>> rows;
  std::map<std::string, std::vector<std::pair<double, double>>> cdf;
};
LatencyData read_latency(const fs::path& dir) {
  LatencyData d;
  const Csv lat(dir / "latency.csv");
  if (lat.size() > 0) {
    const std::size_t path = lat.col("path");
    std::vector<std::size_t> cols;
    for (const char* c : {"count", "mean_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"})
      cols.push_back(lat.col(c));
    for (std::size_t r = 0; r < lat.size(); ++r) {
      std::vector<std::string> row{lat.text(r, path)};
      for (std::size_t c : cols)
        row.push_back(fmt_num(lat.num(r, c)));
      d.rows.push_back(std::move(row));
      d.paths.push_back(lat.text(r, path));
    }
  }
  const Csv hist(dir / "latency_histogram.csv");
  if (hist.size() > 0) {
    const std::size_t path = hist.col("path"), lower = hist.col("lower_ns"),
                      upper = hist.col("upper_ns"), count = hist.col("count");
    std::map<std::string, double> totals, seen;
    for (std::size_t r = 0; r < hist.size(); ++r)
      totals[hist.text(r, path)] += hist.num(r, count);
    for (std::size_t r = 0; r < hist.size(); ++r) {
      const std::string& p = hist.text(r, path);
      if (totals[p] <= 0) continue;
      if (d.cdf[p].empty()) d.cdf[p].push_back({hist.num(r, lower), 0.0});
      seen[p] += hist.num(r, count);
      d.cdf[p].push_back({hist.num(r, upper), seen[p] / totals[p]});
    }
  }
  return d;
}
// The CDF lines, in the table's order, their names after `prefix`. A CDF identical to one
// before it is not drawn over it (it would hide it): the line's name says both ("remote =
// remote_via_1_switch").
std::vector<svg::Line> cdf_lines_of(const LatencyData& d, const std::string& prefix) {
  std::vector<svg::Line> lines;
  for (const std::string& p : d.paths) {
    const auto it = d.cdf.find(p);
    if (it == d.cdf.end()) continue;
    auto same = std::find_if(lines.begin(), lines.end(),
                             [&](const svg::Line& l) { return l.points == it->second; });
    if (same != lines.end())
      same->name += " = " + p;
    else
      lines.push_back({prefix + p, it->second});
  }
  return lines;
}

// A bar of the per-hop breakdown chart from a Breakdown stat (nothing if it has no samples);
// parts are added to `parts` as they are first met.
void add_breakdown_bar(std::vector<std::string>& parts, std::vector<svg::Bar>& bars,
                       const std::string& label, const J& s) {
  if (s.at("samples").num() <= 0) return;
  svg::Bar b{label, std::vector<double>(parts.size(), 0.0)};
  for (const auto& [name, mean] : s.at("mean_parts").members()) {
    auto it = std::find(parts.begin(), parts.end(), name);
    if (it == parts.end()) {
      parts.push_back(name);
      for (auto& other : bars)
        other.parts.push_back(0.0);
      b.parts.push_back(0.0);
      it = parts.end() - 1;
    }
    b.parts[static_cast<std::size_t>(it - parts.begin())] = mean.num();
  }
  bars.push_back(std::move(b));
}
// Leaves out the parts that are zero in every bar; returns the parts kept.
std::vector<std::string> drop_empty_parts(const std::vector<std::string>& parts,
                                          std::vector<svg::Bar>& bars) {
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
  return kept;
}

// The bandwidth series of a run's timeseries.csv over the span that had traffic (setup before
// it can take most of a run), padded; names after `prefix`; with `from_start`, times count
// from the first bin with traffic (so that two runs line up).
std::vector<svg::Line> bandwidth_lines(const fs::path& dir, const std::string& prefix,
                                       bool from_start) {
  const Csv ts(dir / "timeseries.csv");
  std::vector<svg::Line> bw;
  if (ts.size() == 0) return bw;
  const std::size_t t = ts.col("t_ns");
  std::vector<std::size_t> series;
  for (std::size_t c = 0; c < ts.head().size(); ++c)
    if (c != t) series.push_back(c);
  std::size_t first = ts.size(), last = 0;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    ts.num(i, t);
    for (std::size_t c : series)
      if (ts.num(i, c) > 0) {
        first = std::min(first, i);
        last = std::max(last, i);
      }
  }
  if (first > last) return bw;
  const std::size_t pad = std::max<std::size_t>(2, (last - first) / 20);
  const std::size_t lo = first > pad ? first - pad : 0;
  const std::size_t hi = std::min(ts.size() - 1, last + pad);
  const double zero = from_start ? ts.num(first, t) : 0.0;
  for (std::size_t c : series) {
    const std::string& col = ts.head()[c];
    svg::Line l{prefix + col.substr(0, col.find('_')), {}};
    for (std::size_t i = from_start ? first : lo; i <= hi; ++i)
      l.points.push_back({(ts.num(i, t) - zero) / 1000.0, ts.num(i, c)});
    if (std::any_of(l.points.begin(), l.points.end(), [](const auto& p) { return p.second > 0; }))
      bw.push_back(std::move(l));
  }
  return bw;
}

// A run's warnings (run.json "warnings") as a note under `heading` (HTML); "" when it has none.
std::string warnings_note(const J& run, const std::string& heading) {
  if (!run.contains("warnings")) return {};
  std::string items;
  for (const J& w : run.at("warnings").items())
    items += fmt::format("<li><b>{}</b>: {}</li>", svg::escape(w.at("code").str()),
                         svg::escape(w.at("message").str()));
  return items.empty() ? std::string()
                       : "<div class=note>" + heading + "<ul>" + items + "</ul></div>\n";
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

// As people read numbers: whole ones in full (1267310, never 1.26731e+06), others to six
// significant digits, without an exponent between 1e-3 and 1e15.
std::string fmt_num(double v) {
  const double a = std::fabs(v);
  if (a < 1e15 && v == std::floor(v)) return fmt::format("{:.0f}", v);
  if (a >= 1e-3 && a < 1e15) {
    std::string s = fmt::format("{:.6g}", v);
    if (s.find('e') == std::string::npos) return s;
    return fmt::format("{:.1f}", v);
  }
  return fmt::format("{:.6g}", v);
}

// ---- a run -------------------------------------------------------------------------------

// A run's run.json, if it has one (a run writes it last).
std::optional<JsonFile> read_run_json(const fs::path& dir) {
  if (!fs::exists(dir / "run.json")) return std::nullopt;
  return read_json(dir / "run.json");
}

// Why a run's results are not results, in words (none: it completed as configured). A run
// writes run.json last: a directory without one holds a run that was stopped or killed.
std::vector<std::string> failure_reasons(const fs::path& dir, const J& stats_doc,
                                         const std::optional<JsonFile>& run_file) {
  std::vector<std::string> why;
  if (run_file) {
    const J run = run_file->root();
    if (!run.at("finished").boolean())
      why.push_back("it did not finish (run.json: finished false)");
    if (const auto n = run.at("failures").items().size())
      why.push_back(fmt::format("{} failure{} (run.json)", n, n > 1 ? "s" : ""));
    if (const auto n = run.at("invariant_violations").items().size())
      why.push_back(fmt::format("{} invariant violation{} (run.json)", n, n > 1 ? "s" : ""));
  } else {
    why.push_back("it has no run.json, which a run writes last: it was stopped or killed");
  }
  if (stats_doc.contains("ok") && !stats_doc.at("ok").boolean())
    why.push_back("it did not complete as configured (stats.json: ok false)");
  std::vector<std::string> marked;
  for (const char* f : {"latency.csv", "latency_histogram.csv", "breakdown.csv", "timeseries.csv",
                        "collectives.csv"})
    if (fs::exists(dir / f) && Csv(dir / f).failed()) marked.push_back(f);
  if (!marked.empty())
    why.push_back(fmt::format("{} {} marked as from a failed run", fmt::join(marked, ", "),
                              marked.size() > 1 ? "are" : "is"));
  return why;
}

std::string run_report(const fs::path& dir, std::string& title) {
  const JsonFile stats_file = read_json(dir / "stats.json");
  const J stats_doc = stats_file.root();
  const J stats = stats_doc.at("stats");
  stats.obj();
  const std::optional<JsonFile> run_file = read_run_json(dir);
  title = fmt::format("podsim run: {}", stats_doc.at("config_name").str());
  std::string body;

  // Identity and headline numbers.
  std::vector<std::vector<std::string>> meta = {
      {"seed", fmt_num(stats_doc.at("seed").num())},
      {"simulated time",  // in a fitting unit: "2.301 ms"
       pretty(Time::ps(std::llround(stats_doc.at("simulated_time_ns").num() * 1e3)))},
      {"podsim", stats_doc.at("podsim_version").str()}};
  if (run_file) {
    const J run = run_file->root();
    meta.push_back({"config", run.at("config_source").str()});
    meta.push_back({"finished", run.at("finished").boolean() ? "yes" : "no"});
    meta.push_back({"failures", std::to_string(run.at("failures").items().size())});
    meta.push_back(
        {"invariant violations", std::to_string(run.at("invariant_violations").items().size())});
  } else {
    meta.push_back({"run.json", "missing: the run was stopped or killed"});
  }
  if (stats_doc.contains("ok"))
    meta.push_back({"completed as configured", stats_doc.at("ok").boolean() ? "yes" : "no"});
  if (const auto why = failure_reasons(dir, stats_doc, run_file); !why.empty())
    body += fmt::format(
        "<p class=note><b>This run failed</b>: {}. Its results describe a run that did not "
        "complete as configured.</p>\n",
        svg::escape(fmt::format("{}", fmt::join(why, "; "))));
  body += table({"run", ""}, meta);
  // What the run does not measure as it seems to (run.json "warnings"), before any number.
  if (run_file)
    body += warnings_note(run_file->root(),
                          "<b>Warnings</b>: what this run does not measure as it seems to");
  auto stat = [&](const std::string& key) -> std::optional<J> {
    if (!stats.contains(key)) return std::nullopt;
    return stats.at(key);
  };
  std::vector<std::vector<std::string>> head;
  for (const char* k :
       {"remote_accesses", "achieved_bandwidth", "access_phase_time", "faults", "retries",
        "payload_efficiency", "measured.remote_accesses", "measured.warmup_accesses",
        "measured.achieved_bandwidth", "measured.window_time"})
    if (const auto s = stat(std::string("pod.summary.") + k))
      head.push_back({k, fmt_num(s->at("value").num()), s->at("unit").str()});
  if (run_file && run_file->root().contains("phases")) {
    const J ph = run_file->root().at("phases");
    for (const char* k : {"setup_ns", "access_ns", "teardown_ns"})
      head.push_back({std::string("phase: ") + std::string(k).substr(0, std::string(k).size() - 3),
                      pretty(Time::ps(std::llround(ph.at(k).num() * 1e3))), "simulated"});
  }
  body += table({"headline", "value", "unit"}, head);

  // A collective (workload.kind collective): its sizes as a collective benchmark shows them,
  // and bus bandwidth and time against size.
  if (fs::exists(dir / "collectives.csv")) {
    const Csv c(dir / "collectives.csv");
    body += "<h2>Collective</h2>\n";
    if (c.size() == 0) {
      body += "<p class=note>collectives.csv has no sizes.</p>\n";
    } else {
      body += fmt::format(
          "<p class=note>{} {} over {} GPUs: each size's calls timed from the first "
          "participant's start to the last one's end (collectives.csv; wrong: elements of the "
          "outputs that differ from the right sums, blank when functional data was off).</p>\n",
          svg::escape(c.text(0, c.col("op"))), svg::escape(c.text(0, c.col("algorithm"))),
          svg::escape(c.text(0, c.col("participants"))));
      std::vector<std::vector<std::string>> rows;
      std::vector<std::string> sizes;
      svg::Line bus{"bus bandwidth", {}}, alg{"algorithm bandwidth", {}}, time{"time", {}};
      for (std::size_t r = 0; r < c.size(); ++r) {
        const double bytes = c.num(r, c.col("bytes"));
        sizes.push_back(to_string(Bytes(static_cast<std::uint64_t>(bytes))));
        rows.push_back({sizes.back(), fmt_num(c.num(r, c.col("calls"))),
                        fmt_num(c.num(r, c.col("time_us"))), fmt_num(c.num(r, c.col("algbw_GBps"))),
                        fmt_num(c.num(r, c.col("busbw_GBps"))), c.text(r, c.col("wrong"))});
        const double x = static_cast<double>(r);
        bus.points.emplace_back(x, c.num(r, c.col("busbw_GBps")));
        alg.points.emplace_back(x, c.num(r, c.col("algbw_GBps")));
        time.points.emplace_back(x, c.num(r, c.col("time_us")));
      }
      body += table({"size", "calls", "time (us)", "algbw (GB/s)", "busbw (GB/s)", "wrong"}, rows);
      if (c.size() > 1) {
        body += svg::line_chart("collective-bw", "Bandwidth against size", {"size", sizes},
                                {"GB/s", {}}, {bus, alg});
        body += svg::line_chart("collective-time", "Time of a call against size", {"size", sizes},
                                {"us", {}}, {time});
      }
    }
  }

  // Latency by path: the table, and its CDF.
  const LatencyData ld = read_latency(dir);
  body += "<h2>Latency by path</h2>\n";
  body += table({"path", "count", "mean ns", "p50", "p90", "p99", "p99.9", "max"}, ld.rows);
  if (!fs::exists(dir / "latency.csv"))
    body += "<p class=note>latency.csv is missing: no latency table.</p>\n";
  const std::vector<svg::Line> cdf_lines = cdf_lines_of(ld, "");
  if (!cdf_lines.empty())
    body += svg::line_chart("latency-cdf", "Latency CDF by path", {"latency (ns)", {}},
                            {"fraction of accesses at or below", {}}, cdf_lines, true);
  else if (!fs::exists(dir / "latency_histogram.csv"))
    body += "<p class=note>latency_histogram.csv is missing: no latency CDF.</p>\n";
  else
    body += "<p class=note>No completed accesses: no latency CDF.</p>\n";

  // Where the time goes, hop by hop: all GPUs, then each GPU that issued remote accesses.
  body += "<h2>Per-hop breakdown of a remote access</h2>\n";
  std::vector<std::string> parts;
  std::vector<svg::Bar> bars;
  auto add_bar = [&](const std::string& label, const J& s) {
    add_breakdown_bar(parts, bars, label, s);
  };
  if (const auto s = stat("pod.summary.remote_breakdown")) add_bar("all GPUs", *s);
  std::size_t gpus_shown = 0, gpus = 0;
  for (;; ++gpus) {
    const auto s = stat(fmt::format("pod.gpu{}.agent.remote_breakdown", gpus));
    if (!s) break;
    if (gpus_shown < 32 && s->at("samples").num() > 0) {
      add_bar(fmt::format("gpu{}", gpus), *s);
      ++gpus_shown;
    }
  }
  const std::vector<std::string> kept = drop_empty_parts(parts, bars);
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
  const std::vector<svg::Line> bw = bandwidth_lines(dir, "", false);
  if (!bw.empty())
    body += svg::line_chart("bandwidth", "Payload bandwidth over time, all GPUs",
                            {"simulated time (us)", {}}, {"GB/s", {}}, bw);
  else if (!fs::exists(dir / "timeseries.csv"))
    body += "<p class=note>No timeseries.csv: no bandwidth to draw.</p>\n";
  else
    body += "<p class=note>No accesses completed: no bandwidth to draw.</p>\n";

  // Ports: how busy each output was over the measured window (the whole run when the
  // stats.json is older than measured windows), on one absolute scale.
  const bool has_window = stats.contains("pod.summary.measured.window_time");
  const bool measured =
      has_window && stats.at("pod.summary.measured.window_time").at("value").num() > 0;
  const std::string which = measured ? "measured_utilisation" : "utilisation";
  const std::string over = measured ? "over the measured window" : "over the run";
  const std::string note =
      measured ? "<p class=note>The share of the time each output spent sending while it "
                 "carried measured traffic (from the first measured access's packet reaching it "
                 "to the last leaving: measured_utilisation in stats.json), on one scale from 0 "
                 "to 100%.</p>\n"
      : has_window
          ? "<p class=note>Nothing was measured in this run (no access completed after a "
            "warm-up): the share of the whole run each output spent sending, setup and "
            "teardown included, on one scale from 0 to 100%.</p>\n"
          : "<p class=note>The share of the whole run each output spent sending (these results "
            "predate measured windows), on one scale from 0 to 100%.</p>\n";
  auto port_rows = [&](const std::regex& re) {
    std::map<std::string, std::vector<double>> util;
    std::vector<std::string> order;
    for (const auto& [key, v] : stats.members()) {
      // std::regex matches by recursion, a frame per character: a key of ~100,000 characters
      // (a damaged stats.json) overflowed the stack (exit 139). No podsim module path is long.
      if (key.size() > 1024) continue;
      std::smatch m;
      if (!std::regex_match(key, m, re) || m[3] != which) continue;
      if (m[2].length() > 4) continue;  // no switch has that many ports: not one of podsim's
      const auto port = static_cast<std::size_t>(std::stoul(m[2]));
      auto [it, fresh] = util.try_emplace(m[1]);
      if (fresh) order.push_back(m[1]);
      if (it->second.size() <= port) it->second.resize(port + 1, -1.0);
      it->second[port] = v.at("value").num();
    }
    std::vector<svg::HeatRow> rows;
    for (const auto& r : order)
      rows.push_back({r, util[r]});
    return rows;
  };
  body += "<h2>Switch-port utilisation</h2>\n" + note;
  static const std::regex switch_port(
      R"(pod\.fabric\.(.*(?:switch|leaf|spine)\d+)\.port(\d+)\.(utilisation|measured_utilisation))");
  if (const auto rows = port_rows(switch_port); !rows.empty())
    body +=
        svg::heatmap("switch-utilisation", "Switch output-port utilisation " + over, "port", rows);
  else
    body += "<p class=note>No switches in this pod.</p>\n";
  body += "<h2>GPU-port utilisation</h2>\n";
  static const std::regex gpu_port(
      R"(pod\.(gpu\d+)\.port(\d+)\.tx\.(utilisation|measured_utilisation))");
  if (const auto rows = port_rows(gpu_port); !rows.empty())
    body +=
        svg::heatmap("gpu-utilisation", "GPU port (transmit) utilisation " + over, "port", rows);
  return body;
}

// ---- a sweep -----------------------------------------------------------------------------

std::string sweep_report(const fs::path& dir, std::string& title) {
  const JsonFile file = read_json(dir / "sweep.json");
  const J doc = file.root();
  const std::vector<J> vary = doc.at("vary").items();
  const std::vector<J> points = doc.at("points").items();
  const std::vector<J> columns = doc.at("columns").items();
  if (vary.empty()) throw ReportError(*file.name + ": vary is empty");
  std::vector<std::string> keys;
  for (const J& v : vary)
    keys.push_back(v.at("key").str());
  std::vector<std::string> column_names;
  for (const J& c : columns)
    column_names.push_back(c.at("column").str());
  title = fmt::format("podsim sweep: {}", fmt::join(keys, " x "));
  std::string body;
  const J config = doc.at("config");
  body += fmt::format("<p>{} points; config {}.</p>\n", points.size(),
                      config.is_string() ? config.str() : "(the embedded default pod)");

  // A failed point's stats are not results: left out of the plots, marked in the table.
  std::vector<bool> ok;
  for (const J& p : points) {
    ok.push_back(p.at("exit_code").num() == 0);
    // Every stat of every point is what podsim writes there: a number (num() refuses what
    // podsim never writes), or nothing (no samples).
    for (const std::string& col : column_names)
      if (const J v = p.at("stats").at(col); !v.is_null()) (void)v.num();
  }
  const auto failed = static_cast<std::size_t>(std::count(ok.begin(), ok.end(), false));
  if (failed)
    body += fmt::format(
        "<p class=note><b>{} of {} points failed</b> (exit code in the table); the plots leave "
        "them out.</p>\n",
        failed, points.size());
  // Points whose numbers do not measure what they seem to (their run.json says it in words).
  std::string warned;
  for (std::size_t i = 0; i < points.size(); ++i) {
    if (!points[i].contains("warnings")) continue;
    std::vector<std::string> codes;
    for (const J& w : points[i].at("warnings").items())
      codes.push_back(w.str());
    if (codes.empty()) continue;
    std::vector<std::string> at;
    for (const auto& [k, v] : points[i].at("values").members())
      at.push_back(k.substr(k.rfind('.') + 1) + "=" + v.str());
    warned += fmt::format("<li>point {:03} ({}): {}</li>", i,
                          svg::escape(fmt::format("{}", fmt::join(at, ", "))),
                          svg::escape(fmt::format("{}", fmt::join(codes, ", "))));
  }
  if (!warned.empty())
    body +=
        "<div class=note><b>Points with warnings</b> (points/NNN/run.json says each in "
        "words); their plotted values are drawn all the same:<ul>" +
        warned + "</ul></div>\n";

  // Each stat against the first varied key; one line per combination of the others.
  std::vector<std::string> xs;
  for (const J& v : vary[0].at("values").items())
    xs.push_back(v.str());
  bool numeric_x = true;
  for (const auto& x : xs)
    numeric_x = numeric_x && to_double(x).has_value();
  std::size_t plots = 0;
  std::vector<std::string> near_constant;
  for (const std::string& col : column_names) {
    std::map<std::string, svg::Line> lines;
    std::vector<std::string> line_order;
    std::set<double> distinct;
    for (std::size_t i = 0; i < points.size(); ++i) {
      const J& p = points[i];
      const J v = p.at("stats").at(col);
      if (!ok[i] || !v.is_number()) continue;
      std::string others;
      for (std::size_t k = 1; k < keys.size(); ++k)
        others += (others.empty() ? "" : ", ") + keys[k] + "=" +  // the whole key: a setting
                  p.at("values").at(keys[k]).str();
      if (others.empty()) others = col;
      const std::string xv = p.at("values").at(keys[0]).str();
      const auto xn = to_double(xv);
      const double x = numeric_x && xn
                           ? *xn
                           : static_cast<double>(std::find(xs.begin(), xs.end(), xv) - xs.begin());
      auto [it, fresh] = lines.try_emplace(others, svg::Line{others, {}});
      if (fresh) line_order.push_back(others);
      it->second.points.push_back({x, v.num()});
      distinct.insert(v.num());
    }
    if (distinct.size() < 2) continue;  // the same at every point: nothing to draw
    // Within 0.1% of itself at every point: a line in the table, not a flat chart.
    const double lo = *distinct.begin(), hi = *distinct.rbegin();
    if (hi - lo <= 1e-3 * std::max(std::fabs(lo), std::fabs(hi))) {
      near_constant.push_back(fmt::format("{} ({} to {})", col, fmt_num(lo), fmt_num(hi)));
      continue;
    }
    std::vector<svg::Line> ls;
    for (const auto& n : line_order)
      ls.push_back(lines[n]);
    body += fmt::format("<h2>{}</h2>\n", svg::escape(col));
    body += svg::line_chart("sweep-" + col, col + " vs " + keys[0],
                            {keys[0], numeric_x ? std::vector<std::string>{} : xs}, {col, {}}, ls);
    ++plots;
  }
  if (!near_constant.empty())
    body += fmt::format("<p class=note>Within 0.1% at every point, not drawn: {}.</p>\n",
                        svg::escape(fmt::format("{}", fmt::join(near_constant, "; "))));
  if (plots == 0) body += "<p class=note>No stat varied across the points that ran.</p>\n";

  // The points.
  std::vector<std::string> head = keys;
  head.push_back("exit");
  head.insert(head.end(), column_names.begin(), column_names.end());
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < points.size(); ++i) {
    const J& p = points[i];
    std::vector<std::string> r;
    for (const auto& k : keys)
      r.push_back(p.at("values").at(k).str());
    r.push_back(fmt_num(p.at("exit_code").num()) + (ok[i] ? "" : " (failed)"));
    for (const std::string& col : column_names) {
      const J v = p.at("stats").at(col);
      r.push_back(v.is_number() ? fmt_num(v.num()) : "");
    }
    rows.push_back(std::move(r));
  }
  body += "<h2>Points</h2>\n" + table(head, rows);
  return body;
}

}  // namespace

// ---- two runs side by side ---------------------------------------------------------------

// Every leaf of a config as key path -> its JSON text.
void flatten(const json::value& v, const std::string& at, std::map<std::string, std::string>& out) {
  if (v.is_object() && !v.get_object().empty()) {
    for (const auto& [k, e] : v.get_object())
      flatten(e, at.empty() ? std::string(k) : at + "." + std::string(k), out);
    return;
  }
  out[at] = json::serialize(v);
}

std::string compare_report(const fs::path& a, const fs::path& b, std::string& title) {
  for (const fs::path& d : {a, b})
    if (!fs::exists(d / "stats.json"))
      throw ReportError(
          fmt::format("{} holds no run's results (stats.json): podsim report A B compares two runs",
                      d.string()));
  // Each run named by its directory's last part when those differ and are short (legends stay
  // readable), else "A" and "B"; the page says which directory is which.
  auto base = [](const fs::path& d) {
    const fs::path p = d.has_filename() ? d : d.parent_path();
    return p.filename().string();
  };
  std::string la = base(a), lb = base(b);
  if (la == lb || la.empty() || lb.empty() || la.size() > 16 || lb.size() > 16) {
    la = "A";
    lb = "B";
  }
  title = fmt::format("podsim: {} against {}", la, lb);
  const JsonFile sa_file = read_json(a / "stats.json"), sb_file = read_json(b / "stats.json");
  const J sa = sa_file.root().at("stats"), sb = sb_file.root().at("stats");
  std::string body =
      fmt::format("<p>{}: <code>{}</code><br>{}: <code>{}</code></p>\n", svg::escape(la),
                  svg::escape(a.string()), svg::escape(lb), svg::escape(b.string()));
  const std::optional<JsonFile> ra_file = read_run_json(a), rb_file = read_run_json(b);
  // A run that failed, or was stopped, is said first: its numbers are not results.
  for (const auto& [label, dir, doc, run_file] :
       {std::tuple{la, a, sa_file.root(), &ra_file}, std::tuple{lb, b, sb_file.root(), &rb_file}}) {
    if (const auto why = failure_reasons(dir, doc, *run_file); !why.empty())
      body += fmt::format(
          "<p class=note><b>{} failed</b>: {}. Its numbers below describe a run that did not "
          "complete as configured, not results to compare.</p>\n",
          svg::escape(label), svg::escape(fmt::format("{}", fmt::join(why, "; "))));
  }

  // What differs between the two configs (config.json: every value, defaults filled in).
  body += "<h2>Config differences</h2>\n";
  if (fs::exists(a / "config.json") && fs::exists(b / "config.json")) {
    std::map<std::string, std::string> ca, cb;
    flatten(read_json(a / "config.json").doc, "", ca);
    flatten(read_json(b / "config.json").doc, "", cb);
    std::vector<std::vector<std::string>> rows;
    std::set<std::string> keys;
    for (const auto& [k, v] : ca)
      keys.insert(k);
    for (const auto& [k, v] : cb)
      keys.insert(k);
    for (const std::string& k : keys) {
      const auto ia = ca.find(k), ib = cb.find(k);
      const std::string va = ia == ca.end() ? "(absent)" : ia->second;
      const std::string vb = ib == cb.end() ? "(absent)" : ib->second;
      if (va != vb) rows.push_back({k, va, vb});
    }
    if (rows.empty())
      body += "<p class=note>The two configs are the same, seed included.</p>\n";
    else
      body += table({"key", la, lb}, rows);
  } else {
    body += "<p class=note>A config.json is missing: the configs cannot be compared.</p>\n";
  }

  // Warnings of either run, first.
  for (const auto& [label, run_file] : {std::pair{la, &ra_file}, std::pair{lb, &rb_file}})
    if (*run_file)
      body += warnings_note((*run_file)->root(), "<b>Warnings of " + svg::escape(label) + "</b>");

  // The headline numbers, each run's and their ratio.
  const bool measured = sa.contains("pod.summary.measured.window_time") &&
                        sb.contains("pod.summary.measured.window_time");
  std::vector<std::vector<std::string>> head;
  auto ratio = [](double x, double y) { return x > 0 ? fmt::format("{:.3f}", y / x) : "-"; };
  auto row = [&](const std::string& name, const std::string& key, const std::string& field) {
    if (!sa.contains(key) || !sb.contains(key)) return;
    const J x = sa.at(key), y = sb.at(key);
    if (!x.contains(field) || !y.contains(field)) return;
    head.push_back({name, fmt_num(x.at(field).num()), fmt_num(y.at(field).num()),
                    ratio(x.at(field).num(), y.at(field).num())});
  };
  const std::string lat =
      measured ? "pod.summary.measured.remote_latency" : "pod.summary.remote_latency";
  row("remote accesses", "pod.summary.remote_accesses", "value");
  row("latency mean (ns)", lat, "mean");
  row("latency p50 (ns)", lat, "p50");
  row("latency p99 (ns)", lat, "p99");
  row("latency p99.9 (ns)", lat, "p999");
  row("achieved bandwidth (GB/s)",
      measured ? "pod.summary.measured.achieved_bandwidth" : "pod.summary.achieved_bandwidth",
      "value");
  if (measured) row("measured window (ns)", "pod.summary.measured.window_time", "value");
  row("access phase (ns)", "pod.summary.access_phase_time", "value");
  row("not served", "pod.summary.faults", "value");
  row("retried", "pod.summary.retries", "value");
  row("payload efficiency", "pod.summary.payload_efficiency", "value");
  row("invariant violations", "pod.summary.invariant_violations", "value");
  body +=
      fmt::format("<p class=note>Latency and bandwidth {}.</p>\n",
                  measured ? "over each run's measured window" : "over each run's access phases");
  body += table({"", la, lb, lb + " / " + la}, head);

  // Collectives (workload.kind collective): each size's time and bus bandwidth in both runs.
  if (fs::exists(a / "collectives.csv") || fs::exists(b / "collectives.csv")) {
    body += "<h2>Collectives</h2>\n";
    struct Size {
      double time_us = 0, busbw = 0;
    };
    auto sizes_of = [](const fs::path& dir, std::string& what) {
      std::map<std::uint64_t, Size> out;
      if (!fs::exists(dir / "collectives.csv")) return out;
      const Csv c(dir / "collectives.csv");
      for (std::size_t r = 0; r < c.size(); ++r) {
        out[static_cast<std::uint64_t>(c.num(r, c.col("bytes")))] = {c.num(r, c.col("time_us")),
                                                                     c.num(r, c.col("busbw_GBps"))};
        what = c.text(r, c.col("op")) + " " + c.text(r, c.col("algorithm")) + " over " +
               c.text(r, c.col("participants")) + " GPUs";
      }
      return out;
    };
    std::string wa = "no collective", wb = "no collective";
    const auto ca = sizes_of(a, wa), cb = sizes_of(b, wb);
    body += fmt::format("<p class=note>{}: {}; {}: {}.</p>\n", svg::escape(la), svg::escape(wa),
                        svg::escape(lb), svg::escape(wb));
    std::set<std::uint64_t> all;
    for (const auto& [k, v] : ca)
      all.insert(k);
    for (const auto& [k, v] : cb)
      all.insert(k);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> cats;
    svg::Line bus_a{la, {}}, bus_b{lb, {}};
    for (const std::uint64_t bytes : all) {
      const auto ia = ca.find(bytes), ib = cb.find(bytes);
      const double x = static_cast<double>(cats.size());
      cats.push_back(to_string(Bytes(bytes)));
      auto cell = [](const auto& it, const auto& m, double Size::*f) {
        return it == m.end() ? std::string("-") : fmt_num(it->second.*f);
      };
      rows.push_back(
          {cats.back(), cell(ia, ca, &Size::time_us), cell(ib, cb, &Size::time_us),
           ia != ca.end() && ib != cb.end() ? ratio(ia->second.time_us, ib->second.time_us) : "-",
           cell(ia, ca, &Size::busbw), cell(ib, cb, &Size::busbw)});
      if (ia != ca.end()) bus_a.points.emplace_back(x, ia->second.busbw);
      if (ib != cb.end()) bus_b.points.emplace_back(x, ib->second.busbw);
    }
    body += table({"size", la + " time (us)", lb + " time (us)", lb + " / " + la,
                   la + " busbw (GB/s)", lb + " busbw (GB/s)"},
                  rows);
    if (cats.size() > 1)
      body += svg::line_chart("collective-bw", "Bus bandwidth against size, both runs",
                              {"size", cats}, {"GB/s", {}}, {bus_a, bus_b});
  }

  // Latency by path, both runs, and their CDFs on the same axes.
  const LatencyData da = read_latency(a), db = read_latency(b);
  body += "<h2>Latency by path</h2>\n";
  std::vector<std::vector<std::string>> lrows;
  for (const auto& [label, d] : {std::pair{la, &da}, std::pair{lb, &db}})
    for (auto r : d->rows) {
      r.insert(r.begin(), label);
      lrows.push_back(std::move(r));
    }
  body += table({"run", "path", "count", "mean ns", "p50", "p90", "p99", "p99.9", "max"}, lrows);
  std::vector<svg::Line> cdf = cdf_lines_of(da, la + ": ");
  for (auto& l : cdf_lines_of(db, lb + ": "))
    cdf.push_back(std::move(l));
  if (!cdf.empty())
    body += svg::line_chart("latency-cdf", "Latency CDF by path, both runs", {"latency (ns)", {}},
                            {"fraction of accesses at or below", {}}, cdf, true);

  // Where the time goes: one bar per run.
  body += "<h2>Per-hop breakdown of a remote access</h2>\n";
  std::vector<std::string> parts;
  std::vector<svg::Bar> bars;
  const std::string bd =
      measured ? "pod.summary.measured.remote_breakdown" : "pod.summary.remote_breakdown";
  if (sa.contains(bd)) add_breakdown_bar(parts, bars, la, sa.at(bd));
  if (sb.contains(bd)) add_breakdown_bar(parts, bars, lb, sb.at(bd));
  const std::vector<std::string> kept = drop_empty_parts(parts, bars);
  if (!bars.empty())
    body += svg::stacked_bars("breakdown", "Mean remote access, hop by hop", "ns", kept, bars);
  else
    body += "<p class=note>No remote accesses in either run: no breakdown.</p>\n";

  // Bandwidth over time, each from its own first traffic.
  body += "<h2>Bandwidth over time</h2>\n";
  std::vector<svg::Line> bw = bandwidth_lines(a, la + ": ", true);
  for (auto& l : bandwidth_lines(b, lb + ": ", true))
    bw.push_back(std::move(l));
  if (!bw.empty())
    body +=
        svg::line_chart("bandwidth", "Payload bandwidth over time, all GPUs, both runs",
                        {"time since the run's first completed access (us)", {}}, {"GB/s", {}}, bw);
  else
    body += "<p class=note>No accesses completed in either run: no bandwidth to draw.</p>\n";
  return body;
}

int report_command(const ReportOptions& opt, std::ostream& out, std::ostream& err) {
  const fs::path dir(opt.dir);
  const fs::path file = opt.out               ? fs::path(*opt.out)
                        : opt.against.empty() ? dir / "report.html"
                                              : fs::path("podsim-compare.html");
  std::string title, body;
  // The page may not replace a file it is drawn from (stats.json, run.json, the CSVs, ...).
  {
    std::error_code ec;
    const fs::path target = fs::weakly_canonical(file, ec);
    for (const fs::path& in : {dir, fs::path(opt.against)}) {
      if (in.empty()) continue;
      const fs::path base = fs::weakly_canonical(in, ec);
      const auto [b, t] = std::mismatch(base.begin(), base.end(), target.begin(), target.end());
      if (b == base.end() && fs::exists(target, ec) && target.extension() != ".html") {
        fmt::print(err,
                   "podsim report: --out {} would overwrite {}, a file of the results it reports "
                   "on\n",
                   file.string(), target.string());
        return 2;
      }
    }
  }
  try {
    if (!opt.against.empty())
      body = compare_report(dir, opt.against, title);
    else if (fs::exists(dir / "sweep.json"))
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
  try {
    write_file(file, page(title, body));  // whole or not at all
  } catch (const std::runtime_error& e) {
    fmt::print(err, "podsim report: {}\n", e.what());
    return 1;
  }
  fmt::print(out, "wrote {}\n", file.string());
  return 0;
}

}  // namespace podsim::tools
