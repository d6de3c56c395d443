#include "sim/pod/tables.hpp"

#include <fmt/format.h>

namespace podsim {

namespace {
std::string num(double v) {
  return fmt::format("{:.10g}", v);
}
}  // namespace

std::string latency_csv(const LatencyPaths& paths) {
  std::string out = "path,count,mean_ns,min_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns\n";
  for (const auto& [name, d] : paths) {
    const LogHistogram& h = d->histogram();
    auto r = [&](double v) { return num(d->reported(v)); };
    auto p = [&](double q) { return r(static_cast<double>(h.percentile(q))); };
    out += fmt::format("{},{},{},{},{},{},{},{},{}\n", name, h.count(), r(h.mean()),
                       r(static_cast<double>(h.min())), p(0.5), p(0.9), p(0.99), p(0.999),
                       r(static_cast<double>(h.max())));
  }
  return out;
}

std::string latency_histogram_csv(const LatencyPaths& paths) {
  std::string out = "path,lower_ns,upper_ns,count\n";
  for (const auto& [name, d] : paths) {
    const LogHistogram& h = d->histogram();
    for (std::size_t i = h.first_bucket(); i < h.bucket_count(); ++i)
      if (const std::uint64_t c = h.bucket_value(i))
        out += fmt::format("{},{},{},{}\n", name,
                           num(d->reported(static_cast<double>(LogHistogram::bucket_lower(i)))),
                           num(d->reported(static_cast<double>(LogHistogram::bucket_upper(i) + 1))),
                           c);
  }
  return out;
}

std::string breakdown_csv(const Breakdown& b, const Breakdown* whole) {
  std::string out = whole ? "hop,mean_ns,whole_run_mean_ns\n" : "hop,mean_ns\n";
  for (std::size_t i = 0; i < b.part_count(); ++i) {
    if (b.part_sum(i) <= 0 && !(whole && whole->part_sum(i) > 0)) continue;
    out += fmt::format("{},{}", b.part_name(i), num(b.part_mean(i)));
    if (whole) out += "," + num(whole->part_mean(i));
    out += "\n";
  }
  return out;
}

std::string timeseries_csv(const TimeSeries& s) {
  std::string out = "t_ns";
  for (const auto& c : s.channels())
    out += "," + c + "_GBps";
  out += "\n";
  const double ns = s.interval().as_ns();
  for (std::size_t b = 0; b < s.bins(); ++b) {
    out += num(static_cast<double>(b) * ns);
    for (std::size_t c = 0; c < s.channels().size(); ++c)
      out += "," + num(static_cast<double>(s.value(c, b)) / ns);  // bytes per ns = GB/s
    out += "\n";
  }
  return out;
}

}  // namespace podsim
