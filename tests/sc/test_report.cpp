// podsim report: one self-contained HTML file, rendered here in headless Chromium, which must
// lay out every plot's marks. The screenshots are kept in tests/artifacts/ of the build.
#include <fmt/format.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "tests/support/run_podsim.hpp"

using podsim::test::run_podsim;
using podsim::test::slurp;
using podsim::test::source_path;
using podsim::test::write_temp_file;
namespace fs = std::filesystem;

namespace {

std::string chromium() {
  for (const char* c : {"/usr/bin/chromium", "/usr/bin/chromium-browser"})
    if (fs::exists(c)) return c;
  FAIL("headless Chromium is needed to render the report: scripts/install-deps.sh chromium");
  return {};
}

// Loads the page in headless Chromium and returns the DOM after its scripts ran; saves a
// screenshot to `png`.
std::string render(const fs::path& html, const fs::path& png) {
  const std::string browser = chromium();
  const fs::path work = fs::path(write_temp_file("profile", "")).parent_path();
  const std::string common = "'" + browser +
                             "' --headless --no-sandbox --disable-gpu --hide-scrollbars "
                             "--no-first-run --user-data-dir='" +
                             (work / "chrome").string() + "' ";
  const fs::path dom = work / "dom.html";
  const std::string dump =
      common + "--dump-dom 'file://" + html.string() + "' >'" + dom.string() + "' 2>/dev/null";
  REQUIRE(std::system(dump.c_str()) == 0);
  fs::create_directories(png.parent_path());
  const std::string shot = common + "--window-size=1100,3000 --screenshot='" + png.string() +
                           "' 'file://" + html.string() + "' >/dev/null 2>&1";
  REQUIRE(std::system(shot.c_str()) == 0);
  return slurp(dom);
}

int attr(const std::string& dom, const std::string& name) {
  std::smatch m;
  REQUIRE(std::regex_search(dom, m, std::regex(name + "=\"(\\d+)\"")));
  return std::stoi(m[1]);
}

void check_plots_drawn(const std::string& dom, int expected_plots) {
  CHECK(attr(dom, "data-plots") == expected_plots);
  CHECK(attr(dom, "data-plots-drawn") == expected_plots);
  // And each plot, by id, has marks the browser laid out.
  std::regex each("<svg class=\"plot\" id=\"([^\"]+)\"[^>]*data-drawn=\"(\\d+)\"");
  int seen = 0;
  for (auto it = std::sregex_iterator(dom.begin(), dom.end(), each); it != std::sregex_iterator();
       ++it) {
    INFO((*it)[1]);
    CHECK(std::stoi((*it)[2]) > 0);
    ++seen;
  }
  CHECK(seen == expected_plots);
}
}  // namespace

TEST_CASE("the report of a run draws its latency CDF, breakdown, bandwidth and switch heatmap",
          "[report]") {
  auto r = run_podsim({"run", "--quiet", "--set", "fabric.topology=leaf_spine", "--set",
                       "fabric.leaf_spine={\"gpus_per_leaf\": 4, \"spines\": 2}", "--set",
                       "workload.traffic.local_fraction=0.2", "--set",
                       "workload.traffic.accesses=1000"});
  REQUIRE(r.exit_code == 0);
  auto rep = run_podsim({"report", r.out_dir}, false);
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const fs::path html = fs::path(r.out_dir) / "report.html";
  const std::string text = slurp(html);
  // Self-contained: nothing fetched from anywhere.
  auto count = [&](const std::string& what) {
    int n = 0;
    for (std::size_t at = 0; (at = text.find(what, at)) != std::string::npos; ++at)
      ++n;
    return n;
  };
  CHECK(count("http") == count("xmlns=\"http://www.w3.org/2000/svg\""));  // no links out
  CHECK(count("src=") == 0);
  for (const char* id :
       {"latency-cdf", "breakdown", "bandwidth", "switch-utilisation", "gpu-utilisation"})
    CHECK_THAT(text, Catch::Contains(std::string("id=\"") + id + "\""));
  // Utilisation over the measured window, on one absolute scale (shown): the busiest cell is
  // as dark as its own share of the time, not dark because it is the busiest.
  CHECK_THAT(text, Catch::Contains("over the measured window") && Catch::Contains(">100%<") &&
                       Catch::Contains(">0%<"));
  {
    const std::regex cell(R"~(fill="rgb\((\d+),\d+,\d+\)"[^>]*><title>[^<]*: ([0-9.]+)%</title>)~");
    double busiest = -1;
    int busiest_red = -1;
    int cells = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), cell);
         it != std::sregex_iterator(); ++it, ++cells) {
      const double pct = std::stod((*it)[2]);
      if (pct > busiest) {
        busiest = pct;
        busiest_red = std::stoi((*it)[1]);
      }
    }
    REQUIRE(cells > 8);
    INFO("busiest cell " << busiest << "%");
    REQUIRE(busiest > 0);
    REQUIRE(busiest < 50);  // a light load: an absolute scale leaves it pale
    CHECK(busiest_red == Approx(255 - busiest / 100 * (255 - 8)).margin(2));
  }
  // The run's warnings come first (8 GPUs x 1,000 accesses is too few for a p99).
  CHECK_THAT(text, Catch::Contains("<b>Warnings</b>") && Catch::Contains("too_few_accesses"));
  CHECK_THAT(text, Catch::Contains("remote_via_3_switches"));
  // Numbers as people read them: no exponents, the simulated time in a fitting unit.
  CHECK_THAT(text, !Catch::Contains("e+0") && !Catch::Contains("e+1"));
  const auto sim_at = text.find("simulated time");
  REQUIRE(sim_at != std::string::npos);
  const std::string sim_row = text.substr(sim_at, text.find("</tr>", sim_at) - sim_at);
  CHECK_THAT(sim_row, Catch::Contains(" ms<") || Catch::Contains(" us<"));

  const fs::path png = fs::current_path() / "artifacts" / "report-run.png";
  const std::string dom = render(html, png);
  check_plots_drawn(dom, 5);
  CHECK(fs::file_size(png) > 30'000);  // a real picture, not a blank page
}

TEST_CASE("the report of a sweep draws each varying stat against the varied key", "[report]") {
  const std::string out = (fs::path(write_temp_file("x", "")).parent_path() / "sweep").string();
  auto s = run_podsim({"sweep", "--quiet", "--vary", "workload.traffic.outstanding=1,4,16",
                       "--vary", "fabric.switch.latency=100ns,300ns", "--set",
                       "workload.traffic.accesses=200", "-j", "2", "--out", out},
                      false);
  REQUIRE(s.exit_code == 0);
  auto rep = run_podsim({"report", out, "--out", out + "/sweep.html"}, false);
  REQUIRE(rep.exit_code == 0);
  const std::string text = slurp(out + "/sweep.html");
  CHECK_THAT(text, Catch::Contains("id=\"sweep-remote_latency_mean_ns\"") &&
                       Catch::Contains("id=\"sweep-achieved_bandwidth_GBps\"") &&
                       Catch::Contains("fabric.switch.latency=100ns") &&
                       Catch::Contains("fabric.switch.latency=300ns"));
  // Stats that do not vary (faults: 0 everywhere) get no plot.
  CHECK_THAT(text, !Catch::Contains("id=\"sweep-faults\""));
  int plots = 0;
  for (std::size_t at = 0; (at = text.find("<svg class=\"plot\"", at)) != std::string::npos; ++at)
    ++plots;
  CHECK(plots >= 5);
  const fs::path png = fs::current_path() / "artifacts" / "report-sweep.png";
  check_plots_drawn(render(out + "/sweep.html", png), plots);
}

TEST_CASE("two runs side by side: the config difference, both runs' numbers on the same axes",
          "[report][compare]") {
  const std::vector<std::string> base = {"run", "--quiet", "--set",
                                         "workload.traffic.accesses=3000"};
  auto a = run_podsim(base);
  auto with_set = base;
  with_set.insert(with_set.end(), {"--set", "fabric.switch.latency=300ns"});
  auto b = run_podsim(with_set);
  REQUIRE(a.exit_code == 0);
  REQUIRE(b.exit_code == 0);
  const std::string html = (fs::path(a.out_dir).parent_path() / "compare.html").string();
  auto rep = run_podsim({"report", a.out_dir, b.out_dir, "--out", html}, false);
  INFO(rep.err);
  REQUIRE(rep.exit_code == 0);
  const std::string text = slurp(html);
  // The one config key that differs, with both values; nothing else listed as different.
  CHECK_THAT(text, Catch::Contains("<td>fabric.switch.latency</td><td>&quot;150ns&quot;</td><td>"
                                   "&quot;300ns&quot;</td>"));
  CHECK(std::count(text.begin(), text.end(), '\n') > 10);
  {
    const auto at = text.find("<h2>Config differences</h2>");
    REQUIRE(at != std::string::npos);
    const auto end = text.find("</table>", at);
    const std::string diff = text.substr(at, end - at);
    int rows = 0;
    for (std::size_t p = 0; (p = diff.find("<tr><td>", p)) != std::string::npos; ++p)
      ++rows;
    CHECK(rows == 1);
  }
  // Headline numbers of both, and the ratio: 150 ns more per switch crossing, twice per access.
  const double la = a.stat("pod.summary.remote_latency", "mean");
  const double lb = b.stat("pod.summary.remote_latency", "mean");
  CHECK(lb - la == Approx(300).margin(5));
  CHECK_THAT(text, Catch::Contains(fmt::format("{:.3f}", lb / la)));
  // Both runs' CDFs, breakdowns and bandwidth on the same axes.
  // Both directories end in "out": the runs are A and B, and the page says which is which.
  const std::string la_name = "A", lb_name = "B";
  CHECK_THAT(text, Catch::Contains("A: <code>" + a.out_dir + "</code>") &&
                       Catch::Contains("B: <code>" + b.out_dir + "</code>"));
  for (const char* id : {"latency-cdf", "breakdown", "bandwidth"})
    CHECK_THAT(text, Catch::Contains(std::string("id=\"") + id + "\""));
  CHECK_THAT(text, Catch::Contains(la_name + ": remote") && Catch::Contains(lb_name + ": remote"));
  const fs::path png = fs::current_path() / "artifacts" / "report-compare.png";
  check_plots_drawn(render(html, png), 3);

  // A sweep is not a run to compare; three directories are one too many.
  CHECK(run_podsim({"report", a.out_dir, fs::path(html).parent_path().string()}, false).exit_code ==
        2);
  auto three = run_podsim({"report", a.out_dir, b.out_dir, a.out_dir}, false);
  CHECK(three.exit_code == 2);
  CHECK_THAT(three.err, Catch::Contains("two runs to compare"));
}

TEST_CASE("report: a directory with no results is an error", "[report]") {
  const std::string empty = fs::path(write_temp_file("x", "")).parent_path().string();
  auto r = run_podsim({"report", empty}, false);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.err, Catch::Contains("neither a run's results"));
  CHECK(run_podsim({"report"}, false).exit_code == 2);
}

TEST_CASE(
    "report: a run without traffic, or without its timeseries, is drawn from what is there, "
    "and a damaged file is an error naming it and its line",
    "[report]") {
  auto quiet = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=0"});
  REQUIRE(quiet.exit_code == 0);
  auto r = run_podsim({"report", quiet.out_dir}, false);
  CHECK(r.exit_code == 0);  // the timeseries has its header only
  fs::remove(fs::path(quiet.out_dir) / "timeseries.csv");
  r = run_podsim({"report", quiet.out_dir}, false);
  CHECK(r.exit_code == 0);
  CHECK_THAT(slurp((fs::path(quiet.out_dir) / "report.html").string()),
             Catch::Contains("No timeseries.csv"));

  auto full = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=50"});
  REQUIRE(full.exit_code == 0);
  const fs::path dir(full.out_dir);
  auto damage = [&](const char* file, auto edit) {
    const std::string name = (dir / file).string();
    const std::string before = slurp(name);
    std::ofstream(name, std::ios::binary) << edit(before);
    auto out = run_podsim({"report", dir.string(), "-o", (dir / "damaged.html").string()}, false);
    std::ofstream(name, std::ios::binary) << before;
    CHECK_FALSE(fs::exists(dir / "damaged.html"));
    return out;
  };
  auto lat = damage("latency.csv", [](std::string s) {
    const auto line2 = s.find('\n') + 1;
    const auto comma = s.find(',', line2);
    return s.substr(0, comma + 1) + "abc" + s.substr(s.find(',', comma + 1));
  });
  CHECK(lat.exit_code == 2);
  CHECK_THAT(lat.err, Catch::Contains("latency.csv:2: column \"count\": \"abc\" is not a number"));
  auto width = damage("latency_histogram.csv", [](std::string s) { return s + "remote,1,2\n"; });
  CHECK(width.exit_code == 2);
  CHECK_THAT(width.err, Catch::Contains("latency_histogram.csv:") &&
                            Catch::Contains(": 3 field(s), the header has 4"));
  auto cut = damage("stats.json", [](std::string s) { return s.substr(0, s.size() / 2); });
  CHECK(cut.exit_code == 2);
  CHECK_THAT(cut.err, Catch::Contains("stats.json:") && Catch::Contains("not valid JSON"));
  auto kind = damage("stats.json", [](std::string s) {
    const auto at = s.find("\"value\"", s.find("\"pod.summary.remote_accesses\""));
    const auto colon = s.find(':', at);
    return s.substr(0, colon + 1) + " \"x\"" + s.substr(s.find_first_of(",\n}", colon + 2));
  });
  CHECK(kind.exit_code == 2);
  CHECK_THAT(kind.err,
             Catch::Contains("stats[\"pod.summary.remote_accesses\"].value is not a number"));
  auto empty = damage("timeseries.csv", [](const std::string&) { return std::string(); });
  CHECK(empty.exit_code == 2);
  CHECK_THAT(empty.err, Catch::Contains("timeseries.csv: empty (no header line)"));
  // Numbers podsim never writes: negative, hex, with a blank.
  auto negative = damage("latency.csv", [](std::string s) {
    const auto line2 = s.find('\n') + 1;
    const auto comma = s.find(',', line2);
    return s.substr(0, comma + 1) + "-4" + s.substr(s.find(',', comma + 1));
  });
  CHECK(negative.exit_code == 2);
  CHECK_THAT(negative.err,
             Catch::Contains("latency.csv:2: column \"count\": \"-4\" is not a number"));
  for (const char* odd : {"0x10", " 5"}) {
    auto r2 = damage("timeseries.csv", [odd](std::string s) {
      const auto line2 = s.find('\n') + 1;
      return s.substr(0, line2) + odd + s.substr(s.find(',', line2));
    });
    CHECK(r2.exit_code == 2);
  }
  auto minus = damage("stats.json", [](std::string s) {
    const auto at = s.find("\"value\"", s.find("\"pod.summary.faults\""));
    const auto colon = s.find(':', at);
    return s.substr(0, colon + 1) + " -3" + s.substr(s.find_first_of(",\n}", colon + 2));
  });
  CHECK(minus.exit_code == 2);
  CHECK_THAT(minus.err, Catch::Contains("stats[\"pod.summary.faults\"].value is -3: not a value "
                                        "podsim writes"));
  // A key twice (the parser would keep the last), a NUL byte, a directory in a file's place.
  auto twice = damage("stats.json",
                      [](std::string s) { return "{\"seed\": 5,\n" + s.substr(s.find('{') + 1); });
  CHECK(twice.exit_code == 2);
  CHECK_THAT(twice.err, Catch::Contains("stats.json:") &&
                            Catch::Contains("the key \"seed\" appears twice in one object"));
  auto nul =
      damage("timeseries.csv", [](std::string s) { return s.insert(s.find('\n') + 3, 1, '\0'); });
  CHECK(nul.exit_code == 2);
  CHECK_THAT(nul.err, Catch::Contains("timeseries.csv:2: a NUL byte: not a file podsim wrote"));
  // Saved by a spreadsheet with CRLF line ends: read as it was.
  {
    const std::string name = (dir / "timeseries.csv").string();
    const std::string before = slurp(name);
    std::string crlf;
    for (char c : before)
      crlf += c == '\n' ? std::string("\r\n") : std::string(1, c);
    std::ofstream(name, std::ios::binary) << crlf;
    CHECK(run_podsim({"report", dir.string()}, false).exit_code == 0);
    std::ofstream(name, std::ios::binary) << before;
  }
  const std::string saved = slurp((dir / "run.json").string());
  fs::remove(dir / "run.json");
  fs::create_directory(dir / "run.json");
  auto folder = run_podsim({"report", dir.string()}, false);
  CHECK(folder.exit_code == 2);
  CHECK_THAT(folder.err, Catch::Contains("run.json: is a directory, not a file"));
  fs::remove(dir / "run.json");
  std::ofstream(dir / "run.json") << saved;
}

TEST_CASE("report: a sweep.json whose stat is not a number podsim writes is an error naming it",
          "[report]") {
  const std::string out = fs::path(write_temp_file("x", "")).parent_path().string() + "/sw";
  auto sweep = run_podsim(
      {"sweep", "--quiet", "--vary", "workload.traffic.accesses=10,20", "--out", out}, false);
  REQUIRE(sweep.exit_code == 0);
  const std::string name = out + "/sweep.json";
  const std::string good = slurp(name);
  for (const char* bad : {"\"abc\"", "-1e308", "true"}) {
    INFO(bad);
    std::string s = good;
    const auto key = s.find("\"remote_latency_mean_ns\"", s.find("\"points\""));
    REQUIRE(key != std::string::npos);
    const auto colon = s.find(':', key);
    s = s.substr(0, colon + 1) + " " + bad + s.substr(s.find_first_of(",\n}", colon + 2));
    std::ofstream(name, std::ios::binary) << s;
    auto r = run_podsim({"report", out}, false);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("sweep.json") && Catch::Contains("remote_latency_mean_ns"));
  }
  std::ofstream(name, std::ios::binary) << good;
  CHECK(run_podsim({"report", out}, false).exit_code == 0);
}

TEST_CASE("report: a bandwidth axis spanning a few units at 1e17 is drawn, not a hang",
          "[report]") {
  // Found by reading the code fuzz_report covers (fuzz/findings/): adding the tick step no
  // longer changed the value, so ticks were added until memory ran out.
  auto run = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=10"});
  REQUIRE(run.exit_code == 0);
  std::ofstream(fs::path(run.out_dir) / "timeseries.csv", std::ios::binary)
      << "t_ns,remote_GBps,local_GBps\n100000000000000000,1,0\n100000000000016384,1,0\n";
  auto r = run_podsim({"report", run.out_dir}, false);
  CHECK(r.exit_code == 0);
}

TEST_CASE("report: a failed or stopped run is marked, alone and beside another", "[report]") {
  const std::vector<std::string> few{"run", "--quiet", "--set", "workload.traffic.accesses=20"};
  auto good = run_podsim(few);
  auto cut = few;  // stopped at sim.max_time inside its access phase: exit 1, its files marked
  cut.insert(cut.end(), {"--set", "sim.max_time=1590500ns"});
  auto partial = run_podsim(cut);
  REQUIRE(good.exit_code == 0);
  REQUIRE(partial.exit_code == 1);
  const std::string page = write_temp_file("compare.html", "");
  auto both = run_podsim({"report", partial.out_dir, good.out_dir, "-o", page}, false);
  REQUIRE(both.exit_code == 0);
  const std::string html = slurp(page);
  CHECK_THAT(html,
             Catch::Contains("<b>A failed</b>: it did not finish (run.json: finished false)"));
  CHECK_THAT(html, !Catch::Contains("<b>B failed</b>"));
  // A run with no run.json (written last) was stopped or killed: failed, alone and beside another.
  fs::remove(fs::path(good.out_dir) / "run.json");
  auto killed = run_podsim({"report", good.out_dir}, false);
  REQUIRE(killed.exit_code == 0);
  CHECK_THAT(slurp(good.out_dir + "/report.html"),
             Catch::Contains("<b>This run failed</b>: it has no run.json, which a run writes last: "
                             "it was stopped or killed"));
  REQUIRE(run_podsim({"report", partial.out_dir, good.out_dir, "-o", page}, false).exit_code == 0);
  CHECK_THAT(slurp(page), Catch::Contains("<b>B failed</b>: it has no run.json"));
}

TEST_CASE("report: its page replaces none of the files it is drawn from, and reads only files",
          "[report]") {
  auto run = run_podsim({"run", "--quiet", "--set", "workload.traffic.accesses=20"});
  REQUIRE(run.exit_code == 0);
  const std::string stats = slurp(run.out_dir + "/stats.json");
  for (const char* f : {"stats.json", "run.json", "latency.csv"}) {
    auto r = run_podsim({"report", run.out_dir, "-o", run.out_dir + "/" + f}, false);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("a file of the results it reports on"));
  }
  CHECK(slurp(run.out_dir + "/stats.json") == stats);
  // A missing table says so; it is not a run without accesses.
  fs::remove(fs::path(run.out_dir) / "latency.csv");
  fs::remove(fs::path(run.out_dir) / "latency_histogram.csv");
  REQUIRE(run_podsim({"report", run.out_dir}, false).exit_code == 0);
  const std::string page = slurp(run.out_dir + "/report.html");
  CHECK_THAT(page, Catch::Contains("latency.csv is missing: no latency table") &&
                       Catch::Contains("latency_histogram.csv is missing: no latency CDF") &&
                       !Catch::Contains("No completed accesses"));
  // A FIFO in place of run.json would wait for ever for a writer; /dev/zero would never end.
  fs::remove(fs::path(run.out_dir) / "run.json");
  REQUIRE(::mkfifo((run.out_dir + "/run.json").c_str(), 0600) == 0);
  auto fifo = run_podsim({"report", run.out_dir}, false);
  CHECK(fifo.exit_code == 2);
  CHECK_THAT(fifo.err, Catch::Contains("run.json: not a regular file"));
  fs::remove(fs::path(run.out_dir) / "run.json");
  fs::create_symlink("/dev/zero", fs::path(run.out_dir) / "run.json");
  auto zero = run_podsim({"report", run.out_dir}, false);
  CHECK(zero.exit_code == 2);
  CHECK_THAT(zero.err, Catch::Contains("run.json: not a regular file"));
}
