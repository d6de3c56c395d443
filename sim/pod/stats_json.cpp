#include "sim/pod/stats_json.hpp"

#include "sim/kernel/stats_collector.hpp"

namespace podsim {
namespace {

class JsonStatVisitor final : public StatVisitor {
 public:
  explicit JsonStatVisitor(boost::json::object& o) : o_(o) {}
  void visit(const Counter& s) override { o_["value"] = s.value(); }
  void visit(const Series& s) override {
    boost::json::array a;
    for (std::uint64_t v : s.values())
      a.push_back(v);
    o_["values"] = std::move(a);
  }
  void visit(const Formula& s) override { o_["value"] = s.value(); }
  void visit(const Distribution& s) override {
    const LogHistogram& h = s.histogram();
    auto r = [&](std::uint64_t v) { return s.reported(static_cast<double>(v)); };
    o_["count"] = h.count();
    o_["mean"] = s.reported(h.mean());
    o_["min"] = r(h.min());
    o_["max"] = r(h.max());
    o_["p50"] = r(h.percentile(0.50));
    o_["p90"] = r(h.percentile(0.90));
    o_["p99"] = r(h.percentile(0.99));
    o_["p999"] = r(h.percentile(0.999));
    if (s.report_buckets()) {
      boost::json::array buckets;  // [lowest value, highest value, count] of each used bucket
      for (std::size_t i = 0; i < h.bucket_count(); ++i)
        if (h.bucket_value(i) > 0)
          buckets.push_back(
              boost::json::array{r(h.bucket_lower(i)), r(h.bucket_upper(i)), h.bucket_value(i)});
      o_["histogram"] = std::move(buckets);
    }
  }
  void visit(const Breakdown& s) override {
    o_["samples"] = s.samples();
    boost::json::object parts;
    for (std::size_t i = 0; i < s.part_count(); ++i)
      if (s.part_sum(i) > 0) parts[s.part_name(i)] = s.part_mean(i);
    o_["mean_parts"] = std::move(parts);
  }

 private:
  boost::json::object& o_;
};

}  // namespace

boost::json::object stat_to_json(const Stat& s) {
  boost::json::object o;
  o["unit"] = s.unit();
  o["desc"] = s.desc();
  JsonStatVisitor v(o);
  s.accept(v);
  return o;
}

boost::json::object collect_stats_json() {
  boost::json::object all;
  collect_stats([&](const std::string& path, const Stat& s) { all[path] = stat_to_json(s); });
  return all;
}

}  // namespace podsim
