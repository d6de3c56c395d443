#include "sim/core/json_write.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>
#include <cmath>

namespace podsim::config {
namespace {

void write(const boost::json::value& v, std::string& out, int indent) {
  auto pad = [&](int n) { out.append(static_cast<std::size_t>(n) * 2, ' '); };
  switch (v.kind()) {
    case boost::json::kind::object: {
      const auto& o = v.get_object();
      if (o.empty()) {
        out += "{}";
        return;
      }
      out += "{\n";
      bool first = true;
      for (const auto& kv : o) {
        if (!first) out += ",\n";
        first = false;
        pad(indent + 1);
        out += boost::json::serialize(boost::json::value(boost::json::string(kv.key())));
        out += ": ";
        write(kv.value(), out, indent + 1);
      }
      out += "\n";
      pad(indent);
      out += "}";
      return;
    }
    case boost::json::kind::array: {
      const auto& a = v.get_array();
      bool scalars = true;
      for (const auto& e : a)
        scalars = scalars && !e.is_object() && !e.is_array();
      if (scalars) {
        out += "[";
        for (std::size_t i = 0; i < a.size(); ++i) {
          if (i) out += ", ";
          write(a[i], out, indent);
        }
        out += "]";
        return;
      }
      out += "[\n";
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (i) out += ",\n";
        pad(indent + 1);
        write(a[i], out, indent + 1);
      }
      out += "\n";
      pad(indent);
      out += "]";
      return;
    }
    case boost::json::kind::double_: {
      double d = v.get_double();
      out += std::isfinite(d) ? fmt::format("{}", d) : "null";
      return;
    }
    default: out += boost::json::serialize(v); return;
  }
}

}  // namespace

std::string to_pretty_json(const boost::json::value& v) {
  std::string out;
  write(v, out, 0);
  out += "\n";
  return out;
}

}  // namespace podsim::config
