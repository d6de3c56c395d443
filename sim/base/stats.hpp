// Statistics, declared by a component where it is built, each with a unit and a meaning:
//
//   StatGroup stats_{"vram"};
//   Counter reads_{stats_, "reads", "count", "read accesses served"};
//
// A stat registers itself with its group; groups nest. Writers (sim/) walk the groups with a
// StatVisitor, so nobody hand-assembles a stats dump. Recording is allocation-free.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/base/histogram.hpp"
#include "sim/base/units.hpp"

namespace podsim {

class StatGroup;
class Counter;
class Formula;
class Distribution;
class Breakdown;

class Series;

class StatVisitor {
 public:
  virtual ~StatVisitor() = default;
  virtual void visit(const Series& s) = 0;
  virtual void visit(const Counter& s) = 0;
  virtual void visit(const Formula& s) = 0;
  virtual void visit(const Distribution& s) = 0;
  virtual void visit(const Breakdown& s) = 0;
};

// A stat's name, unit and meaning: kept once for every stat that shares them (the same stat of
// every GPU), away from the values the hot path updates.
struct StatInfo {
  std::string name, unit, desc;
};

class Stat {
 public:
  Stat(StatGroup& group, std::string name, std::string unit, std::string desc);
  virtual ~Stat() = default;
  Stat(const Stat&) = delete;
  Stat& operator=(const Stat&) = delete;

  const std::string& name() const { return info_->name; }
  const std::string& unit() const { return info_->unit; }
  const std::string& desc() const { return info_->desc; }
  virtual void accept(StatVisitor& v) const = 0;

 private:
  const StatInfo* info_;
};

// A monotonically increasing count of events or bytes.
class Counter final : public Stat {
 public:
  using Stat::Stat;
  void inc(std::uint64_t n = 1) { value_ += n; }
  std::uint64_t value() const { return value_; }
  void accept(StatVisitor& v) const override { v.visit(*this); }

 private:
  std::uint64_t value_ = 0;
};

// A count per index (per channel, per port...): reported as an array.
class Series final : public Stat {
 public:
  Series(StatGroup& group, std::string name, std::string unit, std::string desc, std::size_t n)
      : Stat(group, std::move(name), std::move(unit), std::move(desc)), values_(n, 0) {}
  void add(std::size_t i, std::uint64_t n) { values_[i] += n; }
  const std::vector<std::uint64_t>& values() const { return values_; }
  void accept(StatVisitor& v) const override { v.visit(*this); }

 private:
  std::vector<std::uint64_t> values_;
};

// A value derived from other stats, evaluated when stats are written (gem5's formulas).
class Formula final : public Stat {
 public:
  Formula(StatGroup& group, std::string name, std::string unit, std::string desc,
          std::function<double()> fn);
  double value() const { return fn_(); }
  void accept(StatVisitor& v) const override { v.visit(*this); }

 private:
  std::function<double()> fn_;
};

// Samples are recorded as integers in a base unit (ps for times) and reported in `unit`,
// divided by `divisor` (kPsPerNs: ps recorded, ns reported).
inline constexpr double kPsPerNs = 1000.0;

// A distribution of integer samples (times, sizes...) with percentiles.
class Distribution final : public Stat {
 public:
  Distribution(StatGroup& group, std::string name, std::string unit, std::string desc,
               double divisor = 1.0);
  void record(std::uint64_t v) { hist_.record(v); }
  void record(Time t) { hist_.record(t.as_ps() < 0 ? 0 : static_cast<std::uint64_t>(t.as_ps())); }
  const LogHistogram& histogram() const { return hist_; }
  void merge(const Distribution& other) { hist_.merge(other.hist_); }
  double divisor() const { return divisor_; }
  // Writers also list the histogram's buckets (for small-valued ones such as occupancies).
  void report_buckets(bool on) { report_buckets_ = on; }
  bool report_buckets() const { return report_buckets_; }
  // A recorded value (or the mean) in the reported unit.
  double reported(double raw) const { return raw / divisor_; }
  void accept(StatVisitor& v) const override { v.visit(*this); }

 private:
  LogHistogram hist_;
  double divisor_;
  bool report_buckets_ = false;
};

// A total split into named parts (the per-hop latency breakdown): each part accumulates a
// sum; the report gives each part's mean over `samples()` and its share of the total.
class Breakdown final : public Stat {
 public:
  Breakdown(StatGroup& group, std::string name, std::string unit, std::string desc,
            std::vector<std::string> parts, double divisor = 1.0);
  void add(std::size_t part, std::uint64_t v) { sums_[part] += v; }
  void add_sample() { ++samples_; }
  std::size_t part_count() const { return parts_.size(); }
  const std::string& part_name(std::size_t i) const { return parts_[i]; }
  long double part_sum(std::size_t i) const { return static_cast<long double>(sums_[i]); }
  std::uint64_t samples() const { return samples_; }
  double part_mean(std::size_t i) const;  // in the reported unit
  void merge(const Breakdown& other);     // same parts, in the same order
  void accept(StatVisitor& v) const override { v.visit(*this); }

 private:
  std::vector<std::string> parts_;
  std::vector<std::uint64_t> sums_;
  std::uint64_t samples_ = 0;
  double divisor_;
};

// A named set of stats and nested groups. A component owns one; stats register into it.
class StatGroup {
 public:
  explicit StatGroup(std::string name = {}) : name_(std::move(name)) {}
  StatGroup(const StatGroup&) = delete;
  StatGroup& operator=(const StatGroup&) = delete;

  const std::string& name() const { return name_; }
  void add_child(const StatGroup& g) { children_.push_back(&g); }
  const std::vector<const Stat*>& stats() const { return stats_; }
  const std::vector<const StatGroup*>& children() const { return children_; }

  // Calls fn(path, stat) for every stat in this group and below; `prefix` names this group.
  void for_each(const std::string& prefix,
                const std::function<void(const std::string&, const Stat&)>& fn) const;

 private:
  friend class Stat;
  std::string name_;
  std::vector<const Stat*> stats_;
  std::vector<const StatGroup*> children_;
};

// A component that exposes stats (the collector in sim/kernel finds these in the module tree).
class HasStats {
 public:
  virtual ~HasStats() = default;
  virtual const StatGroup& stat_group() const = 0;
};

}  // namespace podsim
