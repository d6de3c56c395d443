// podsim report's readers on damaged input (found by fuzz/fuzz_report): plain C++, through
// report_command on a run directory written here.
#include <unistd.h>
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/tools/report.hpp"
#include "sim/tools/svg.hpp"

namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

std::string stats_json(const std::string& extra_stats) {
  return R"({"podsim_version": "0.1.0", "config_name": "t", "seed": 1,
             "simulated_time_ns": 1000, "ok": true, "stats": {
             "pod.fabric.plane0.switch0.port1.utilisation": {"value": 0.5, "unit": "1"})" +
         extra_stats + "}}";
}

}  // namespace

TEST_CASE("report: a very long stat key is skipped, not matched to the stack's end", "[report]") {
  const fs::path dir =
      fs::temp_directory_path() / ("podsim-report-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // 200,000 characters in a key that would match the switch-port pattern: std::regex
  // recursed once per character and overflowed the stack (segfault).
  const std::string key = "pod.fabric." + std::string(200000, 'a') + "switch1.port2.utilisation";
  write(dir / "stats.json", stats_json(",\n\"" + key + R"(": {"value": 0.25, "unit": "1"})"));
  std::ostringstream out, err;
  CHECK(podsim::tools::report_command({dir.string(), std::nullopt, {}}, out, err) == 0);
  CHECK(err.str().empty());
  std::ifstream html(dir / "report.html");
  std::stringstream page;
  page << html.rdbuf();
  // The short key is drawn; the long one is not (its switch name would be in the heatmap).
  CHECK(page.str().find("switch-utilisation") != std::string::npos);
  CHECK(page.str().find("aaaaswitch1") == std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a chart's axes end on labelled ticks, whatever the data's extent", "[report][svg]") {
  // Latencies from 597 to 1,459 ns (ticks 200 apart) and a CDF up to 0.93: the axes run from
  // 400 to 1,600 and to 1, labelled at both ends.
  podsim::tools::svg::Line l{"remote", {{597.0, 0.0}, {1459.0, 0.93}}};
  const std::string s =
      podsim::tools::svg::line_chart("c", "t", {"latency (ns)", {}}, {"fraction", {}}, {l});
  CHECK(s.find(">1600<") != std::string::npos);
  CHECK(s.find(">1<") != std::string::npos);
  CHECK(s.find(">400<") != std::string::npos);
  // Bars up to 837 ns: the axis runs to 1000.
  const std::string b =
      podsim::tools::svg::stacked_bars("b", "t", "ns", {"a", "b"}, {{"all", {400.0, 437.0}}});
  CHECK(b.find(">1000<") != std::string::npos);
}
