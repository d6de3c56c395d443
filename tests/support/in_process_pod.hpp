// Helpers for tests that build a Pod in their own process (tests/sc): a config from --set
// overrides, stats by name, and the address a process's first mapping gets.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "sim/core/config_io.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/pod_config_io.hpp"

namespace podsim::test {

// The GPU virtual address of a process's first mapping (the scenario runner's first 2 MiB
// slot); the next mappings follow at 2 MiB-aligned addresses.
constexpr std::uint64_t kLocalVa = 0x0000'1000'0000'0000ull;

// The embedded default pod with these "key.path=value" overrides.
inline PodConfig config_with(const std::vector<std::string>& sets) {
  auto doc = config::ConfigDoc::from_text("{}", "test");
  for (const auto& s : sets)
    doc.apply_override(s);
  return read_pod_config(doc);
}

inline std::uint64_t counter(const StatGroup& g, const std::string& name) {
  for (const Stat* s : g.stats())
    if (s->name() == name) return s->as<Counter>()->value();
  FAIL("no counter " << name);
  return 0;
}

}  // namespace podsim::test
