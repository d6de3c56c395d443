// Statistics, declared by a component where it is built, each with a unit and a meaning:
//
//   StatGroup stats_{"vram"};
//   Counter reads_{stats_, "reads", "count", "read requests served"};
//
// A stat registers itself with its group; groups nest. Writers (sim/) walk the groups with a
// StatVisitor, so nobody hand-assembles a stats dump. Recording is allocation-free, and a
// stat object holds only its values (a Counter is 8 bytes): the name, unit and meaning live in
// the group's registry, kept once for every stat that shares them, away from the hot path.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "sim/core/histogram.hpp"
#include "sim/core/units.hpp"

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

// A stat's name, unit and meaning (shared by every stat that has the same three).
struct StatInfo {
  std::string name, unit, desc;
};

// A registered stat, as writers see it: its description and what it is.
class Stat {
 public:
  enum class Kind : std::uint8_t { Counter, Series, Formula, Distribution, Breakdown };

  const std::string& name() const { return info_->name; }
  const std::string& unit() const { return info_->unit; }
  const std::string& desc() const { return info_->desc; }
  Kind kind() const { return kind_; }
  void accept(StatVisitor& v) const;
  // The stat itself, if it is a T (nullptr otherwise).
  template <class T>
  const T* as() const {
    return kind_ == T::kKind ? static_cast<const T*>(obj_) : nullptr;
  }

 private:
  friend class StatGroup;
  // The reduction of a finished run adds other processes' values into the stats themselves
  // (sim/core/stat_pack.hpp): the one caller that changes a stat through its Stat.
  friend const std::uint64_t* merge_packed(const Stat&, const std::uint64_t*, const std::uint64_t*);
  Stat(const StatInfo* info, Kind kind, void* obj) : info_(info), kind_(kind), obj_(obj) {}
  template <class T>
  T* as_mutable() const {
    return kind_ == T::kKind ? static_cast<T*>(obj_) : nullptr;
  }
  const StatInfo* info_;
  Kind kind_;
  void* obj_;
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

  // What a stat's constructor calls.
  void add(Stat::Kind kind, void* obj, std::string name, std::string unit, std::string desc);

 private:
  std::string name_;
  std::deque<Stat> entries_;  // stable addresses
  std::vector<const Stat*> stats_;
  std::vector<const StatGroup*> children_;
};

// A monotonically increasing count of events or bytes.
class Counter {
 public:
  static constexpr Stat::Kind kKind = Stat::Kind::Counter;
  Counter(StatGroup& group, std::string name, std::string unit, std::string desc) {
    group.add(kKind, this, std::move(name), std::move(unit), std::move(desc));
  }
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;
  void inc(std::uint64_t n = 1) { value_ += n; }
  std::uint64_t value() const { return value_; }

 private:
  std::uint64_t value_ = 0;
};

// A count per index (per channel, per port...): reported as an array.
class Series {
 public:
  static constexpr Stat::Kind kKind = Stat::Kind::Series;
  Series(StatGroup& group, std::string name, std::string unit, std::string desc, std::size_t n)
      : values_(n, 0) {
    group.add(kKind, this, std::move(name), std::move(unit), std::move(desc));
  }
  Series(const Series&) = delete;
  Series& operator=(const Series&) = delete;
  void add(std::size_t i, std::uint64_t n) { values_[i] += n; }
  const std::vector<std::uint64_t>& values() const { return values_; }

 private:
  std::vector<std::uint64_t> values_;
};

// A value derived from other stats, evaluated when stats are written (gem5's formulas).
class Formula {
 public:
  static constexpr Stat::Kind kKind = Stat::Kind::Formula;
  Formula(StatGroup& group, std::string name, std::string unit, std::string desc,
          std::function<double()> fn);
  Formula(const Formula&) = delete;
  Formula& operator=(const Formula&) = delete;
  double value() const { return fn_(); }

 private:
  std::function<double()> fn_;
};

// Samples are recorded as integers in a base unit (ps for times) and reported in `unit`,
// divided by `divisor` (kPsPerNs: ps recorded, ns reported).
inline constexpr double kPsPerNs = 1000.0;

// A distribution of integer samples (times, sizes...) with percentiles.
class Distribution {
 public:
  static constexpr Stat::Kind kKind = Stat::Kind::Distribution;
  Distribution(StatGroup& group, std::string name, std::string unit, std::string desc,
               double divisor = 1.0);
  Distribution(const Distribution&) = delete;
  Distribution& operator=(const Distribution&) = delete;
  void record(std::uint64_t v) { hist_.record(v); }
  void record(Time t) { hist_.record(t.as_ps() < 0 ? 0 : static_cast<std::uint64_t>(t.as_ps())); }
  const LogHistogram& histogram() const { return hist_; }
  void merge(const Distribution& other) { hist_.merge(other.hist_); }
  // Adds a histogram given as its state (LogHistogram::merge_state).
  template <class... A>
  void merge_state(A&&... state) {
    hist_.merge_state(std::forward<A>(state)...);
  }
  double divisor() const { return divisor_; }
  // Writers also list the histogram's buckets (for small-valued ones such as occupancies).
  void report_buckets(bool on) { report_buckets_ = on; }
  bool report_buckets() const { return report_buckets_; }
  // A recorded value (or the mean) in the reported unit.
  double reported(double raw) const { return raw / divisor_; }

 private:
  alignas(64) LogHistogram hist_;  // its recording fields in one cache line (histogram.hpp)
  double divisor_;
  bool report_buckets_ = false;
};

// A total split into named parts (the per-hop latency breakdown): each part accumulates a
// sum; the report gives each part's mean over `samples()` and its share of the total.
class Breakdown {
 public:
  static constexpr Stat::Kind kKind = Stat::Kind::Breakdown;
  Breakdown(StatGroup& group, std::string name, std::string unit, std::string desc,
            std::vector<std::string> parts, double divisor = 1.0);
  Breakdown(const Breakdown&) = delete;
  Breakdown& operator=(const Breakdown&) = delete;
  void add(std::size_t part, std::uint64_t v) { sums_[part] += v; }
  void add_sample() { ++samples_; }
  std::size_t part_count() const { return parts_.size(); }
  const std::string& part_name(std::size_t i) const { return parts_[i]; }
  long double part_sum(std::size_t i) const { return static_cast<long double>(sums_[i]); }
  std::uint64_t samples() const { return samples_; }
  double part_mean(std::size_t i) const;  // in the reported unit
  void merge(const Breakdown& other);     // same parts, in the same order
  // Adds part sums (one per part, in order) and a number of samples: what merge() adds,
  // given as values (throws std::invalid_argument if the number of sums is not part_count()).
  void merge(std::span<const std::uint64_t> sums, std::uint64_t samples);
  std::span<const std::uint64_t> sums() const { return sums_; }

 private:
  std::vector<std::uint64_t> sums_;
  std::uint64_t samples_ = 0;
  std::vector<std::string> parts_;
  double divisor_;
};

// A component that exposes stats (the collector in sim/kernel finds these in the module tree).
class HasStats {
 public:
  virtual ~HasStats() = default;
  virtual const StatGroup& stat_group() const = 0;
};

}  // namespace podsim
