// CSV tables of a run, for pandas or a spreadsheet (plain C++ over the stats).
//   latency.csv            path,count,mean_ns,min_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns
//   latency_histogram.csv  path,lower_ns,upper_ns,count   (the non-empty buckets)
//   breakdown.csv          hop,mean_ns                    (remote accesses, all GPUs)
//   timeseries.csv         t_ns,remote_GBps,local_GBps    (payload bandwidth per interval)
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/core/stats.hpp"
#include "sim/core/time_series.hpp"

namespace podsim {

using LatencyPaths = std::vector<std::pair<std::string, const Distribution*>>;

// The first line of each CSV of a run that failed (before the header), and its start.
inline constexpr const char* kFailedCsvMark = "# podsim: ";
std::string latency_csv(const LatencyPaths& paths);
std::string latency_histogram_csv(const LatencyPaths& paths);
// With `whole` (a run with a warm-up: `b` is the measured window's), a column of the whole
// run's means beside.
std::string breakdown_csv(const Breakdown& b, const Breakdown* whole = nullptr);
std::string timeseries_csv(const TimeSeries& s);

}  // namespace podsim
