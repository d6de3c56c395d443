#include "sim/tools/golden.hpp"

#include <fmt/format.h>

#include <boost/json.hpp>
#include <cctype>
#include <cmath>
#include <map>

namespace podsim::tools {

namespace json = boost::json;

std::string fold_key(const std::string& key) {
  std::string out;
  std::size_t start = 0;
  while (start <= key.size()) {
    std::size_t dot = key.find('.', start);
    if (dot == std::string::npos) dot = key.size();
    std::string part = key.substr(start, dot - start);
    std::size_t digits = part.size();
    while (digits > 0 && std::isdigit(static_cast<unsigned char>(part[digits - 1])))
      --digits;
    if (digits > 0 && digits < part.size()) part = part.substr(0, digits) + "*";
    if (!out.empty() || start > 0) out += '.';
    out += part;
    start = dot + 1;
  }
  return out;
}

namespace {

double num(const json::value& v) {
  return v.is_double()  ? v.as_double()
         : v.is_int64() ? static_cast<double>(v.as_int64())
                        : static_cast<double>(v.as_uint64());
}

// The fold of several stats of one kind.
struct Fold {
  std::size_t n = 0;
  json::object first;  // the only member, when n == 1
  // counters and formulas ("value")
  double sum = 0, lo = INFINITY, hi = -INFINITY;
  bool integral = true;
  // distributions
  double count = 0, dmin = INFINITY, dmax = -INFINITY, weighted = 0;
  // series
  std::vector<double> values;
  // breakdowns
  double samples = 0;
  std::map<std::string, double> parts;  // samples-weighted sums
  std::vector<std::string> part_order;

  void add(const json::object& s) {
    if (n++ == 0) first = s;
    if (const auto* v = s.if_contains("value")) {
      integral = integral && !v->is_double();
      const double x = num(*v);
      sum += x;
      lo = std::min(lo, x);
      hi = std::max(hi, x);
    } else if (const auto* c = s.if_contains("count")) {
      const double k = num(*c);
      count += k;
      if (k > 0) {
        dmin = std::min(dmin, num(s.at("min")));
        dmax = std::max(dmax, num(s.at("max")));
      }
      weighted += k * num(s.at("mean"));
    } else if (const auto* vs = s.if_contains("values")) {
      const auto& a = vs->as_array();
      if (values.size() < a.size()) values.resize(a.size(), 0.0);
      for (std::size_t i = 0; i < a.size(); ++i)
        values[i] += num(a[i]);
    } else if (const auto* smp = s.if_contains("samples")) {
      const double k = num(*smp);
      samples += k;
      for (const auto& [name, mean] : s.at("mean_parts").as_object()) {
        const std::string p(name);
        if (!parts.count(p)) part_order.push_back(p);
        parts[p] += k * num(mean);
      }
    }
  }

  json::object result() const {
    json::object o;
    if (n == 1) {  // one component: its values as they are (less the words)
      for (const auto& [k, v] : first)
        if (k != "unit" && k != "desc" && k != "histogram") o[k] = v;
      return o;
    }
    o["components"] = n;
    if (first.contains("value")) {
      if (integral) {
        o["sum"] = static_cast<std::uint64_t>(std::llround(sum));
      } else {
        o["sum"] = sum;
      }
      o["min"] = lo;
      o["max"] = hi;
    } else if (first.contains("count")) {
      o["count"] = static_cast<std::uint64_t>(std::llround(count));
      o["min"] = count > 0 ? dmin : 0.0;
      o["max"] = count > 0 ? dmax : 0.0;
      o["mean"] = count > 0 ? weighted / count : 0.0;
    } else if (first.contains("values")) {
      json::array a;
      for (double v : values)
        a.push_back(v);
      o["values"] = std::move(a);
    } else if (first.contains("samples")) {
      o["samples"] = static_cast<std::uint64_t>(std::llround(samples));
      json::object mp;
      for (const auto& p : part_order)
        mp[p] = samples > 0 ? parts.at(p) / samples : 0.0;
      o["mean_parts"] = std::move(mp);
    }
    return o;
  }
};

void flatten(const std::string& prefix, const json::value& v,
             std::map<std::string, const json::value*>& out) {
  if (v.is_object()) {
    for (const auto& [k, x] : v.as_object())
      flatten(prefix.empty() ? std::string(k) : prefix + "." + std::string(k), x, out);
  } else if (v.is_array()) {
    const auto& a = v.as_array();
    for (std::size_t i = 0; i < a.size(); ++i)
      flatten(prefix + "[" + std::to_string(i) + "]", a[i], out);
  } else {
    out[prefix] = &v;
  }
}

std::string show(const json::value* v) {
  if (!v) return "(absent)";
  if (v->is_double()) return fmt::format("{}", v->as_double());  // shortest exact form
  return json::serialize(*v);
}

}  // namespace

json::object condense_stats(const json::object& stats) {
  std::map<std::string, Fold> folds;
  std::vector<std::string> order;
  for (const auto& [key, s] : stats) {
    const std::string f = fold_key(std::string(key));
    auto [it, fresh] = folds.try_emplace(f);
    if (fresh) order.push_back(f);
    it->second.add(s.as_object());
  }
  json::object out;
  for (const auto& k : order)
    out[k] = folds.at(k).result();
  return out;
}

std::string stats_digest(const json::object& stats) {
  // FNV-1a's step with a start value one digit short of the standard offset basis
  // (14695981039346656037): a slip kept on purpose, as every stored golden digest uses it.
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  for (const auto& [key, s] : stats) {
    mix(key);
    for (const auto& [field, v] : s.as_object())
      if (field != "unit" && field != "desc") {
        mix(field);
        mix(json::serialize(v));
      }
  }
  return fmt::format("{:016x}", h);
}

std::vector<Difference> compare_condensed(const json::object& golden, const json::object& actual) {
  std::map<std::string, const json::value*> g, a;
  for (const auto& [k, v] : golden)  // (not flatten(golden): that would copy it into a value)
    flatten(std::string(k), v, g);
  for (const auto& [k, v] : actual)
    flatten(std::string(k), v, a);
  std::vector<Difference> diffs;
  auto differ = [](const json::value& x, const json::value& y) {
    if (x.is_number() && y.is_number()) {
      if (!x.is_double() && !y.is_double()) {
        auto exact = [](const json::value& v) {
          return v.is_int64() ? static_cast<long double>(v.as_int64())
                              : static_cast<long double>(v.as_uint64());
        };
        return exact(x) != exact(y);
      }
      const double p = num(x), q = num(y);
      return std::fabs(p - q) > 1e-9 * std::max(std::fabs(p), std::fabs(q)) + 1e-12;
    }
    return x != y;
  };
  for (const auto& [k, v] : g) {
    auto it = a.find(k);
    if (it == a.end())
      diffs.push_back({k, show(v), "(absent)"});
    else if (differ(*v, *it->second))
      diffs.push_back({k, show(v), show(it->second)});
  }
  for (const auto& [k, v] : a)
    if (!g.count(k)) diffs.push_back({k, "(absent)", show(v)});
  return diffs;
}

}  // namespace podsim::tools
