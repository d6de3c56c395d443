// Everything about one GPU, section by section (each component's config lives beside it).
#pragma once

#include "driver_model/driver_config.hpp"
#include "models/compute/compute_config.hpp"
#include "models/gpuvm/gpuvm_config.hpp"
#include "models/mailbox/mailbox_config.hpp"
#include "models/npa_mmu/npa_mmu_config.hpp"
#include "models/vram/vram_config.hpp"

namespace podsim {

struct GpuConfig {
  ComputeConfig compute;
  GpuVmConfig gpuvm;
  VramConfig vram;
  NpaMmuConfig npa_mmu;
  MailboxConfig mailbox;
  driver::DriverConfig driver;

  template <class V>
  void visit(V& v) {
    v.section("compute", compute, "the compute agent (wavefronts issuing loads and stores)");
    v.section("gpuvm", gpuvm, "the GPUVM MMU translating the agent's virtual addresses");
    v.section("vram", vram, "HBM: capacity, channels, bandwidth, latency");
    v.section("npa_mmu", npa_mmu, "the NPA VM translating incoming remote accesses");
    v.section("mailbox", mailbox, "firmware mailbox carrying driver-to-driver messages");
    v.section("driver", driver, "the kernel driver's costs and limits");
  }
};

}  // namespace podsim
