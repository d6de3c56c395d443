// `podsim report DIR`: one self-contained HTML file (inline SVG, no network) with the plots of
// a run directory (latency CDF by path, per-hop stacked breakdown, bandwidth over time,
// switch-port utilisation heatmap, tables) or of a sweep directory (each headline stat against
// the varied key, one line per combination of the other keys, and the table of points).
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace podsim::tools {

struct ReportOptions {
  std::string dir;
  std::optional<std::string> out;  // default: DIR/report.html
  // A second run's directory: the two side by side (default file: ./podsim-compare.html).
  std::string against;
};

// 0: written; 2: DIR is neither a run's nor a sweep's output (or, comparing, either is not a
// run's), or its files are unreadable.
int report_command(const ReportOptions& opt, std::ostream& out, std::ostream& err);

}  // namespace podsim::tools
