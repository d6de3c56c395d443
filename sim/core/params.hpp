// How a component declares its parameters, without knowing any file format.
//
// A config struct holds typed fields with named defaults and a `visit` template that names
// each field, says what it means and which values are allowed:
//
//   struct SwitchConfig {
//     Time latency = Time::ns(150);
//     unsigned ports = 64;
//     template <class V> void visit(V& v) {
//       v.field("latency", latency, "port-to-port latency at zero load");
//       v.field("ports", ports, "ports per switch", between(2u, 1024u));
//     }
//   };
//
// sim/core/config_io supplies the visitors: a strict JSON reader, a writer of the resolved config
// and a generator of the reference documentation. The same declaration serves all three.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace podsim {

template <class T>
struct Bounds {
  std::optional<T> lo;  // inclusive
  std::optional<T> hi;  // inclusive
};

template <class T>
constexpr Bounds<T> at_least(T lo) {
  return {lo, std::nullopt};
}
template <class T>
constexpr Bounds<T> at_most(T hi) {
  return {std::nullopt, hi};
}
template <class T>
constexpr Bounds<T> between(T lo, T hi) {
  return {lo, hi};
}

// One name of an enumerated parameter, e.g. {"single_switch", Topology::SingleSwitch, "..."}.
template <class E>
struct EnumName {
  std::string_view name;
  E value;
  std::string_view desc;
};

template <class E>
std::string_view enum_name(std::span<const EnumName<E>> names, E v) {
  for (const auto& n : names)
    if (n.value == v) return n.name;
  return "?";
}

}  // namespace podsim
