// The whole pod's configuration: the top of the config file.
#pragma once

#include <string>
#include <vector>

#include "fabric/fabric_config.hpp"
#include "models/compute/compute_config.hpp"
#include "models/gpu_config.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/base/params.hpp"

namespace podsim {

inline constexpr std::array<EnumName<NpaAddrMode>, 2> kAddrModeNames{{
    {"source_aliasing", NpaAddrMode::SourceAliasing, "one NPA range per export, shared"},
    {"source_identification", NpaAddrMode::SourceIdentification, "one NPA range per importer"},
}};

struct PodSection {
  std::uint32_t gpus = 8;
  NpaAddrMode addr_mode = NpaAddrMode::SourceAliasing;

  template <class V>
  void visit(V& v) {
    v.field("gpus", gpus, "accelerators in the pod (one vPod holding all of them)",
            between<std::uint32_t>(2, 1024));
    v.choice("addr_mode", addr_mode, "the vPod's NPA address mode",
             std::span<const EnumName<NpaAddrMode>>(kAddrModeNames));
  }
};

// The default workload: every GPU exports one buffer, imports every other GPU's buffer,
// maps them, and the initiating GPUs then load and store across all of them.
struct WorkloadConfig {
  Bytes buffer_size = Bytes::MiB(1);
  std::vector<std::uint32_t> initiators;  // empty: every GPU
  TrafficConfig traffic;

  template <class V>
  void visit(V& v) {
    v.field("buffer_size", buffer_size, "size of the buffer each GPU exports",
            between(Bytes(4096), Bytes::GiB(64)));
    v.field("initiators", initiators,
            "GPUs that run the access phase (an empty list means every GPU)",
            between<std::uint32_t>(0, 1023));
    v.section("traffic", traffic, "the access phase of each initiating GPU");
  }
};

struct SimSection {
  Time max_time = Time::ms(1000);

  template <class V>
  void visit(V& v) {
    v.field("max_time", max_time,
            "simulated-time limit; a workload still running then is reported as unfinished",
            at_least(Time::ns(1)));
  }
};

struct PodConfig {
  std::string name = "default";
  std::uint64_t seed = 1;
  PodSection pod;
  GpuConfig gpu;
  FabricConfig fabric;
  WorkloadConfig workload;
  SimSection sim;

  template <class V>
  void visit(V& v) {
    v.field("name", name, "a name for this pod configuration (shown in reports)");
    v.field("seed", seed, "seed of every random generator (--seed overrides it)");
    v.section("pod", pod, "pod-wide settings");
    v.section("gpu", gpu, "every GPU of the pod");
    v.section("fabric", fabric, "the UALoE fabric");
    v.section("workload", workload, "what the GPUs do");
    v.section("sim", sim, "simulation control");
  }

  // Checks across sections; `c.fail(path, message)` reports with the full key path.
  template <class C>
  void check(C& c) const {
    if (fabric.topology == Topology::SingleSwitch && pod.gpus > fabric.switch_.ports)
      c.fail("pod.gpus", std::to_string(pod.gpus) +
                             " GPUs on one switch need as many ports, but "
                             "fabric.switch.ports is " +
                             std::to_string(fabric.switch_.ports));
    if (pod.gpus > gpu.driver.accel_max)
      c.fail("pod.gpus", std::to_string(pod.gpus) + " GPUs exceed gpu.driver.accel_max (" +
                             std::to_string(gpu.driver.accel_max) + ")");
    for (std::size_t i = 0; i < workload.initiators.size(); ++i)
      if (workload.initiators[i] >= pod.gpus)
        c.fail("workload.initiators." + std::to_string(i),
               "GPU " + std::to_string(workload.initiators[i]) + " does not exist (pod.gpus is " +
                   std::to_string(pod.gpus) + ")");
    if (workload.buffer_size < workload.traffic.access_size)
      c.fail("workload.buffer_size", "smaller than workload.traffic.access_size");
  }
};

}  // namespace podsim
