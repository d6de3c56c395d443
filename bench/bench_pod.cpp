// How fast podsim simulates: remote accesses per host second on a pod under load.
//
//   build/release/bench/bench_pod [GPUS] [ACCESSES_PER_GPU] [OUTSTANDING]
//
// Prints one line per run; compare builds with the same arguments on the same machine.
#include <fmt/format.h>
#include <chrono>
#include <cstdlib>
#include <string>

#include "sim/core/config_io.hpp"
#include "sim/core/huge_pages.hpp"
#include "sim/pod/pod.hpp"
#include "sim/pod/pod_config_io.hpp"

namespace {
const bool kNoBanner = setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0) == 0;
}

extern "C" int sc_main(int argc, char* argv[]);

int sc_main(int argc, char* argv[]) {
  podsim::restart_with_huge_heap(argv);  // first: it starts the process again
  const std::string gpus = argc > 1 ? argv[1] : "8";
  const std::string accesses = argc > 2 ? argv[2] : "200000";
  const std::string outstanding = argc > 3 ? argv[3] : "32";
  auto doc = podsim::config::ConfigDoc::from_text("{}", "bench");
  doc.apply_override("pod.gpus=" + gpus);
  doc.apply_override("workload.traffic.accesses=" + accesses);
  doc.apply_override("workload.traffic.outstanding=" + outstanding);
  doc.apply_override("fabric.switch.ports=1024");
  doc.apply_override("gpu.driver.accel_max=1024");
  const podsim::PodConfig cfg = podsim::read_pod_config(doc);
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO,
                                          sc_core::SC_DO_NOTHING);

  const auto t0 = std::chrono::steady_clock::now();
  podsim::Pod pod("pod", cfg);
  const auto t1 = std::chrono::steady_clock::now();
  pod.run();
  const auto t2 = std::chrono::steady_clock::now();
  const double build_s = std::chrono::duration<double>(t1 - t0).count();
  const double run_s = std::chrono::duration<double>(t2 - t1).count();
  fmt::print(
      "bench_pod gpus={} accesses/gpu={} outstanding={}: {} remote accesses, simulated {}, "
      "build {:.2f} s, run {:.2f} s, {:.0f} remote accesses per host second\n",
      gpus, accesses, outstanding, pod.summary().remote_accesses(),
      podsim::pretty(podsim::sim_now()), build_s, run_s,
      static_cast<double>(pod.summary().remote_accesses()) / run_s);
  return pod.ok() ? 0 : 1;
}
