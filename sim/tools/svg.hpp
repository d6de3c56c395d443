// Small SVG charts for the HTML report (plain C++, no dependencies): line charts, horizontal
// stacked bars and heatmaps, each a self-contained <svg class="plot"> element.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace podsim::tools::svg {

struct Line {
  std::string name;
  std::vector<std::pair<double, double>> points;  // x, y
};

struct Axis {
  std::string label;
  // Categorical axis: tick labels at x = 0, 1, 2, ... (empty: numeric).
  std::vector<std::string> categories;
};

std::string line_chart(const std::string& id, const std::string& title, const Axis& x,
                       const Axis& y, const std::vector<Line>& lines, bool step = false);

struct Bar {
  std::string label;
  std::vector<double> parts;  // in the order of `part_names`
};
std::string stacked_bars(const std::string& id, const std::string& title, const std::string& unit,
                         const std::vector<std::string>& part_names, const std::vector<Bar>& bars);

struct HeatRow {
  std::string label;
  std::vector<double> cells;  // 0..1 (negative: no such cell)
};
std::string heatmap(const std::string& id, const std::string& title,
                    const std::string& column_label, const std::vector<HeatRow>& rows);

// "1.5 k", "250 m"...: short numbers for tick labels.
std::string tick_label(double v);
std::string escape(const std::string& s);

}  // namespace podsim::tools::svg
