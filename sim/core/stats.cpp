#include "sim/core/stats.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

namespace podsim {

namespace {
// Every distinct (name, unit, meaning), once: a 1,024-GPU pod keeps one copy of each.
const StatInfo* intern(std::string name, std::string unit, std::string desc) {
  struct Less {
    bool operator()(const StatInfo& a, const StatInfo& b) const {
      return std::tie(a.name, a.unit, a.desc) < std::tie(b.name, b.unit, b.desc);
    }
  };
  static std::set<StatInfo, Less> infos;
  return &*infos.insert(StatInfo{std::move(name), std::move(unit), std::move(desc)}).first;
}
}  // namespace

void StatGroup::add(Stat::Kind kind, void* obj, std::string name, std::string unit,
                    std::string desc) {
  // stats.json keys each stat by its path: two of one name in a group would be one key twice.
  for (const Stat* s : stats_)
    if (s->name() == name)
      throw std::logic_error("stat group '" + name_ + "' has a stat named '" + name + "' already");
  entries_.push_back(Stat(intern(std::move(name), std::move(unit), std::move(desc)), kind, obj));
  stats_.push_back(&entries_.back());
}

void Stat::accept(StatVisitor& v) const {
  switch (kind_) {
    case Kind::Counter: v.visit(*static_cast<const Counter*>(obj_)); break;
    case Kind::Series: v.visit(*static_cast<const Series*>(obj_)); break;
    case Kind::Formula: v.visit(*static_cast<const Formula*>(obj_)); break;
    case Kind::Distribution: v.visit(*static_cast<const Distribution*>(obj_)); break;
    case Kind::Breakdown: v.visit(*static_cast<const Breakdown*>(obj_)); break;
  }
}

Formula::Formula(StatGroup& group, std::string name, std::string unit, std::string desc,
                 std::function<double()> fn)
    : fn_(std::move(fn)) {
  group.add(kKind, this, std::move(name), std::move(unit), std::move(desc));
}

Distribution::Distribution(StatGroup& group, std::string name, std::string unit, std::string desc,
                           double divisor)
    : divisor_(divisor) {
  group.add(kKind, this, std::move(name), std::move(unit), std::move(desc));
}

Breakdown::Breakdown(StatGroup& group, std::string name, std::string unit, std::string desc,
                     std::vector<std::string> parts, double divisor)
    : sums_(parts.size(), 0), parts_(std::move(parts)), divisor_(divisor) {
  group.add(kKind, this, std::move(name), std::move(unit), std::move(desc));
}

double Breakdown::part_mean(std::size_t i) const {
  if (samples_ == 0) return 0.0;
  return static_cast<double>(part_sum(i) / samples_ / divisor_);
}

void Breakdown::merge(const Breakdown& o) {
  if (o.parts_ != parts_) throw std::logic_error("Breakdown::merge: parts differ");
  merge(o.sums_, o.samples_);
}

void Breakdown::merge(std::span<const std::uint64_t> sums, std::uint64_t samples) {
  if (sums.size() != sums_.size())
    throw std::invalid_argument("Breakdown::merge: " + std::to_string(sums.size()) +
                                " part sums for " + std::to_string(sums_.size()) + " parts");
  for (std::size_t i = 0; i < sums_.size(); ++i)
    sums_[i] += sums[i];
  samples_ += samples;
}

void StatGroup::for_each(const std::string& prefix,
                         const std::function<void(const std::string&, const Stat&)>& fn) const {
  std::string path;  // one buffer for the group's paths
  for (const Stat* s : stats_) {
    if (prefix.empty()) {
      fn(s->name(), *s);
      continue;
    }
    path.assign(prefix);
    path += '.';
    path += s->name();
    fn(path, *s);
  }
  for (const StatGroup* g : children_) {
    std::string p =
        g->name().empty() ? prefix : (prefix.empty() ? g->name() : prefix + "." + g->name());
    g->for_each(p, fn);
  }
}

}  // namespace podsim
