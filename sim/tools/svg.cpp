#include "sim/tools/svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace podsim::tools::svg {

namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
                                    "#1f3d63", "#a0522d", "#8cd17d", "#b6992d", "#499894",
                                    "#d37295", "#79706e", "#d4a6c8", "#86bcb6", "#f1ce63"};
const char* color(std::size_t i) {
  return kPalette[i % (sizeof kPalette / sizeof *kPalette)];
}

// The round step between about `n` ticks over [lo, hi].
double tick_step(double lo, double hi, int n = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / n;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

// Widens [lo, hi] to whole ticks, so that both ends of an axis carry a label; returns the
// step between the ticks (0: none fits; ticks() then picks its own).
double to_whole_ticks(double& lo, double& hi) {
  if (!(hi > lo)) return 0;
  const double step = tick_step(lo, hi);
  if (!(step > 0) || !std::isfinite(step)) return 0;
  const double a = std::floor(lo / step) * step, b = std::ceil(hi / step) * step;
  if (!std::isfinite(a) || !std::isfinite(b) || !(b > a)) return 0;
  lo = a, hi = b;
  return step;
}

// Tick positions: round numbers covering [lo, hi], `step` apart (0: about 5 of them).
std::vector<double> ticks(double lo, double hi, double step = 0) {
  if (!(hi > lo)) hi = lo + 1;
  if (!(step > 0)) step = tick_step(lo, hi);
  // Indexed, not accumulated: where adding the step no longer changes a value (a span of a
  // few units at 1e17) an accumulating loop never ends. At most 100 ticks, whatever the data.
  std::vector<double> t;
  const double first = std::ceil(lo / step);
  for (int k = 0; k < 100; ++k) {
    const double v = (first + k) * step;
    if (!(v <= hi + step * 1e-9)) break;
    if (!t.empty() && v == t.back()) break;
    t.push_back(std::fabs(v) < step * 1e-9 ? 0.0 : v);
  }
  return t;
}

std::string open_svg(const std::string& id, const std::string& title, int w, int h) {
  return fmt::format(
      R"(<svg class="plot" id="{}" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" )"
      R"(viewBox="0 0 {} {}" font-family="sans-serif" font-size="11">)"
      R"(<text x="{}" y="16" text-anchor="middle" font-size="14" font-weight="bold">{}</text>)",
      id, w, h, w, h, w / 2, escape(title));
}

}  // namespace

std::string escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string tick_label(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  return fmt::format("{:g}", v);
}

std::string line_chart(const std::string& id, const std::string& title, const Axis& x,
                       const Axis& y, const std::vector<Line>& lines, bool step) {
  const int W = 760, H = 380, L = 70, R = 170, T = 30, B = 50;
  const double pw = W - L - R, ph = H - T - B;
  double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
  for (const auto& l : lines)
    for (auto [px, py] : l.points) {
      x0 = std::min(x0, px);
      x1 = std::max(x1, px);
      y0 = std::min(y0, py);
      y1 = std::max(y1, py);
    }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1;
  if (!std::isfinite(y1) || y1 <= y0) y1 = y0 + 1;
  if (x1 <= x0) x1 = x0 + 1;
  // Both ends of each axis on a labelled tick.
  const double ystep = to_whole_ticks(y0, y1);
  const double xstep = x.categories.empty() ? to_whole_ticks(x0, x1) : 0.0;
  if (!x.categories.empty()) x0 = -0.5, x1 = static_cast<double>(x.categories.size()) - 0.5;
  auto sx = [&](double v) { return L + (v - x0) / (x1 - x0) * pw; };
  auto sy = [&](double v) { return T + ph - (v - y0) / (y1 - y0) * ph; };

  std::string s = open_svg(id, title, W, H);
  s += fmt::format(R"(<rect x="{}" y="{}" width="{}" height="{}" fill="#fafafa" stroke="#ccc"/>)",
                   L, T, pw, ph);
  for (double t : ticks(y0, y1, ystep)) {
    s += fmt::format(R"(<line x1="{}" x2="{}" y1="{:.1f}" y2="{:.1f}" stroke="#e4e4e4"/>)", L,
                     L + pw, sy(t), sy(t));
    s += fmt::format(R"(<text x="{}" y="{:.1f}" text-anchor="end">{}</text>)", L - 6, sy(t) + 4,
                     tick_label(t));
  }
  if (x.categories.empty()) {
    for (double t : ticks(x0, x1, xstep))
      s += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", sx(t),
                       T + ph + 16, tick_label(t));
  } else {
    for (std::size_t i = 0; i < x.categories.size(); ++i)
      s += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)",
                       sx(static_cast<double>(i)), T + ph + 16, escape(x.categories[i]));
  }
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", L + pw / 2, H - 10,
                   escape(x.label));
  s += fmt::format(
      R"~(<text transform="translate(14,{}) rotate(-90)" text-anchor="middle">{}</text>)~",
      T + ph / 2, escape(y.label));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string d;
    for (std::size_t k = 0; k < lines[i].points.size(); ++k) {
      auto [px, py] = lines[i].points[k];
      if (k == 0)
        d += fmt::format("M{:.1f},{:.1f}", sx(px), sy(py));
      else if (step)
        d += fmt::format(" H{:.1f} V{:.1f}", sx(px), sy(py));
      else
        d += fmt::format(" L{:.1f},{:.1f}", sx(px), sy(py));
    }
    s += fmt::format(R"(<path class="series" d="{}" fill="none" stroke="{}" stroke-width="2"/>)", d,
                     color(i));
    if (lines[i].points.size() <= 40)
      for (auto [px, py] : lines[i].points)
        s += fmt::format(R"(<circle cx="{:.1f}" cy="{:.1f}" r="3" fill="{}"/>)", sx(px), sy(py),
                         color(i));
    s += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)", W - R + 12,
                     T + 8 + 18 * i, color(i));
    s += fmt::format(R"(<text x="{}" y="{}">{}</text>)", W - R + 30, T + 18 + 18 * i,
                     escape(lines[i].name));
  }
  return s + "</svg>\n";
}

std::string stacked_bars(const std::string& id, const std::string& title, const std::string& unit,
                         const std::vector<std::string>& part_names, const std::vector<Bar>& bars) {
  const int L = 90, R = 170, T = 30, B = 40, W = 760, bar_h = 18, gap = 6;
  const int H = T + B + static_cast<int>(bars.size()) * (bar_h + gap);
  const double pw = W - L - R;
  double total = 0;
  for (const auto& b : bars) {
    double t = 0;
    for (double v : b.parts)
      t += v;
    total = std::max(total, t);
  }
  if (total <= 0) total = 1;
  double zero = 0;
  const double step = to_whole_ticks(zero, total);  // the axis ends on a labelled tick
  auto sx = [&](double v) { return L + v / total * pw; };
  std::string s =
      open_svg(id, title, W, std::max(H, T + B + 18 * static_cast<int>(part_names.size())));
  for (double t : ticks(0, total, step)) {
    s += fmt::format(R"(<line x1="{:.1f}" x2="{:.1f}" y1="{}" y2="{}" stroke="#e4e4e4"/>)", sx(t),
                     sx(t), T, H - B);
    s += fmt::format(R"(<text x="{:.1f}" y="{}" text-anchor="middle">{}</text>)", sx(t), H - B + 16,
                     tick_label(t));
  }
  s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle">{}</text>)", L + pw / 2, H - 6,
                   escape(unit));
  for (std::size_t b = 0; b < bars.size(); ++b) {
    const int y = T + static_cast<int>(b) * (bar_h + gap);
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end">{}</text>)", L - 6, y + 13,
                     escape(bars[b].label));
    double at = 0;
    for (std::size_t p = 0; p < bars[b].parts.size(); ++p) {
      const double v = bars[b].parts[p];
      if (v <= 0) continue;
      s += fmt::format(
          R"(<rect class="segment" x="{:.1f}" y="{}" width="{:.1f}" height="{}" fill="{}"><title>{}: {:.1f} {}</title></rect>)",
          sx(at), y, sx(at + v) - sx(at), bar_h, color(p), escape(part_names[p]), v, escape(unit));
      at += v;
    }
  }
  for (std::size_t p = 0; p < part_names.size(); ++p) {
    s += fmt::format(R"(<rect x="{}" y="{}" width="12" height="12" fill="{}"/>)", W - R + 12,
                     T + 18 * p, color(p));
    s += fmt::format(R"(<text x="{}" y="{}">{}</text>)", W - R + 30, T + 10 + 18 * p,
                     escape(part_names[p]));
  }
  return s + "</svg>\n";
}

std::string heatmap(const std::string& id, const std::string& title,
                    const std::string& column_label, const std::vector<HeatRow>& rows) {
  std::size_t cols = 0;
  for (const auto& r : rows)
    cols = std::max(cols, r.cells.size());
  const int L = 130, T = 30, B = 80, R = 20;
  const int cell = std::clamp(600 / static_cast<int>(std::max<std::size_t>(cols, 1)), 3, 24);
  const int rh = std::clamp(480 / static_cast<int>(std::max<std::size_t>(rows.size(), 1)), 3, 20);
  const int W = std::max(L + cell * static_cast<int>(cols) + R, 640);
  const int H = T + rh * static_cast<int>(rows.size()) + B;
  std::string s = open_svg(id, title, W, H);
  const bool label_rows = rh >= 9;
  // One absolute scale, 0 to 100% busy, so that two reports (and two switches) compare; the
  // busiest cell is named in the caption.
  double busiest = 0;
  for (const auto& r : rows)
    for (double v : r.cells)
      busiest = std::max(busiest, v);
  auto colour = [](double v) {  // white (idle) to dark blue (always busy)
    const double t = std::clamp(v, 0.0, 1.0);
    return fmt::format("rgb({},{},{})", static_cast<int>(255 - t * (255 - 8)),
                       static_cast<int>(255 - t * (255 - 48)),
                       static_cast<int>(255 - t * (255 - 107)));
  };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const int y = T + static_cast<int>(r) * rh;
    if (label_rows || r % std::max<std::size_t>(1, rows.size() / 16) == 0)
      s += fmt::format(R"(<text x="{}" y="{}" text-anchor="end" font-size="{}">{}</text>)", L - 4,
                       y + rh - 1, std::min(rh, 11), escape(rows[r].label));
    for (std::size_t c = 0; c < rows[r].cells.size(); ++c) {
      const double v = rows[r].cells[c];
      if (v < 0) continue;
      s += fmt::format(
          R"~(<rect class="cell" x="{}" y="{}" width="{}" height="{}" fill="{}" stroke="#eee" stroke-width="0.5"><title>{} {}{}: {:.1f}%</title></rect>)~",
          L + static_cast<int>(c) * cell, y, cell, rh, colour(v), escape(rows[r].label),
          escape(column_label), c, 100 * v);
    }
  }
  s += fmt::format(
      R"(<text x="{}" y="{}" text-anchor="middle">{} (0 to {}); the busiest: {:.1f}%</text>)",
      std::max(L + cell * static_cast<int>(cols) / 2, 210), H - 46, escape(column_label),
      cols ? cols - 1 : 0, 100 * busiest);
  // The scale itself: eleven steps from 0% to 100%, labelled at the ends and the middle.
  const int sx = L, sy = H - 34, sw = 20;
  for (int k = 0; k <= 10; ++k)
    s += fmt::format(
        R"(<rect class="scale" x="{}" y="{}" width="{}" height="10" fill="{}" stroke="#ccc" stroke-width="0.5"/>)",
        sx + k * sw, sy, sw, colour(k / 10.0));
  for (int k : {0, 5, 10})
    s += fmt::format(R"(<text x="{}" y="{}" text-anchor="middle" font-size="10">{}%</text>)",
                     sx + k * sw + sw / 2, sy + 22, k * 10);
  s += fmt::format(
      R"(<text x="{}" y="{}" font-size="10">utilisation (fraction of the time busy)</text>)",
      sx + 11 * sw + 8, sy + 9);
  return s + "</svg>\n";
}

}  // namespace podsim::tools::svg
