#include "sim/pod/stats_json.hpp"

#include <stdexcept>

#include "sim/core/stats.hpp"
#include "sim/kernel/stats_collector.hpp"

namespace podsim {
namespace {

class JsonStatVisitor final : public StatVisitor {
 public:
  explicit JsonStatVisitor(config::PrettyJson& w) : w_(w) {}
  void visit(const Counter& s) override { w_.member("value", s.value()); }
  void visit(const Series& s) override {
    w_.key("values");
    w_.begin_array(true);
    for (std::uint64_t v : s.values())
      w_.value(v);
    w_.end_array();
  }
  void visit(const Formula& s) override { w_.member("value", s.value()); }
  void visit(const Distribution& s) override {
    const LogHistogram& h = s.histogram();
    auto r = [&](std::uint64_t v) { return s.reported(static_cast<double>(v)); };
    static constexpr double kQ[] = {0.50, 0.90, 0.99, 0.999};
    std::uint64_t p[4];
    h.percentiles(kQ, p, 4);
    w_.member("count", h.count());
    w_.member("mean", s.reported(h.mean()));
    w_.member("min", r(h.min()));
    w_.member("max", r(h.max()));
    w_.member("p50", r(p[0]));
    w_.member("p90", r(p[1]));
    w_.member("p99", r(p[2]));
    w_.member("p999", r(p[3]));
    if (s.report_buckets()) {
      w_.key("histogram");  // [lowest value, highest value, count] of each used bucket
      w_.begin_array(false);
      for (std::size_t i = h.first_bucket(); i < h.bucket_count(); ++i)
        if (h.bucket_value(i) > 0) {
          w_.begin_array(true);
          w_.value(r(h.bucket_lower(i)));
          w_.value(r(h.bucket_upper(i)));
          w_.value(h.bucket_value(i));
          w_.end_array();
        }
      w_.end_array();
    }
  }
  void visit(const Breakdown& s) override {
    w_.member("samples", s.samples());
    w_.key("mean_parts");
    w_.begin_object();
    for (std::size_t i = 0; i < s.part_count(); ++i)
      if (s.part_sum(i) > 0) w_.member(s.part_name(i), s.part_mean(i));
    w_.end_object();
  }

 private:
  config::PrettyJson& w_;
};

// One stat as a member: its path, then {"unit", "desc", and what it holds}.
void write_stat(config::PrettyJson& w, JsonStatVisitor& v, const std::string& path, const Stat& s) {
  w.key(path);
  w.begin_object();
  w.member("unit", s.unit());
  w.member("desc", s.desc());
  s.accept(v);
  w.end_object();
}

}  // namespace

void write_stats(config::PrettyJson& w, const StatSplice& splice) {
  JsonStatVisitor v(w);
  const StatFn each = [&](const std::string& path, const Stat& s) { write_stat(w, v, path, s); };
  if (!splice) {
    collect_stats(each);
    return;
  }
  if (w.depth() != kStatsDepth)
    throw std::logic_error("write_stats: text made at depth " + std::to_string(kStatsDepth) +
                           " spliced at depth " + std::to_string(w.depth()));
  collect_stats(each, [&](const sc_core::sc_object& obj) {
    const std::optional<std::string_view> text = splice(obj);
    if (text) w.splice_members(*text);
    return text.has_value();
  });
}

void stats_text_under(const sc_core::sc_object& root, std::string& text) {
  config::PrettyJson w(text);
  w.continue_object(kStatsDepth);
  JsonStatVisitor v(w);
  collect_stats_under(root,
                      [&](const std::string& path, const Stat& s) { write_stat(w, v, path, s); });
}

}  // namespace podsim
