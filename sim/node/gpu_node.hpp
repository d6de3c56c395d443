// GpuNode: one GPU, composed. Its UALink port's `tx`/`rx` sockets are what the topology
// wires to the fabric.
//
//   ComputeAgent -> GpuVm -> Vram                        (local accesses)
//                     \-> UalinkPort[plane].tx ...fabric (remote accesses, plane by address)
//   ...fabric... UalinkPort[p].rx -> NpaMmu -> Vram      (accesses from other GPUs)
//   FirmwareMailbox <-> UalinkPort[plane]                (driver-to-driver messages: ring
//                                                         writes land via NpaMmu -> Vram)
//   DriverShell programs GpuVm, NpaMmu, Vram and talks through the mailbox.
#pragma once

#include "fabric/fabric_config.hpp"
#include "fabric/ualink_port.hpp"
#include "models/compute/compute_agent.hpp"
#include "models/gpuvm/gpuvm.hpp"
#include "models/mailbox/firmware_mailbox.hpp"
#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"
#include "sim/core/invariants.hpp"
#include "sim/node/driver_shell.hpp"
#include "sim/node/gpu_config.hpp"
#include "sim/node/socket_tap.hpp"

#include <memory>
#include <vector>

namespace podsim {

class GpuNode final : public sc_core::sc_module {
 public:
  // `pod_gpus`: the pod's accelerators, each a possible sender to this GPU (the firmware's
  // ring metadata covers every one, so a vPod changed later can use them).
  GpuNode(sc_core::sc_module_name name, const GpuConfig& cfg, const FabricConfig& fabric,
          AccelId id, driver::VpodInfo vpod, NpaAddrMode mode, std::uint64_t seed, PacketPool& pool,
          Dispatcher& events, InvariantLog* invariants, SocketTap* tap, std::uint32_t pod_gpus);

  AccelId id() const { return id_; }

  // The GPU is reset now and stays down for `down_for`: its port and firmware take nothing,
  // its processes and driver state are gone, its memory and page tables are wiped. It then
  // comes back with fresh state, as an item of the pod's event queue (its queue
  // pod.gpuN.up): at that very time, work the contract orders before it (the fabric's, this
  // GPU's agent, driver, GPUVM, mailbox, NPA MMU and ports') still finds it down, at any
  // number of ranks. A reset while down puts the return off to the new time.
  void reset(Time down_for);
  bool down() const { return ports.front()->down(); }
  UalinkPort& port(std::uint32_t plane) { return *ports[plane]; }
  // The rings' receive pages the GPU maps in its NPA VM when active
  // (models/npa_mmu/npa_layout.hpp).
  std::size_t ring_pages() const;
  // As a freshly loaded driver on a device not yet activated: UNCONFIGURED, NPA translation
  // off, the rings unmapped, the firmware halted (a pod that simulates its bring-up).
  void unconfigure();

  Vram vram;
  GpuVm gpuvm;
  NpaMmu npa_mmu;
  FirmwareMailbox mailbox;
  std::vector<std::unique_ptr<UalinkPort>> ports;  // one per switch plane
  ComputeAgent agent;
  driver::DriverShell driver;

 private:
  // Binds initiator socket `i` to target socket `t`, through the tap if there is one.
  template <class I, class T>
  void join(I& i, T& t) {
    if (!tap_) {
      i.bind(t);
      return;
    }
    const auto ends = tap_->tap(std::string(i.name()) + "->" + t.name());
    i.bind(*ends.in);
    ends.out->bind(t);
  }

  void reserve_ring_pages();
  // f(first key, keys) for each run of ring pages, in frame order.
  template <class F>
  void for_each_ring_run(F f) const;
  std::uint64_t map_rings(bool up, bool flush = true);  // the PTEs written

  SocketTap* tap_;
  AccelId id_;
  NpaAddrMode mode_;
  bool b2_;                     // the snapshot's B2 put back (source identification only)
  std::vector<AccelId> peers_;  // the vPod's members (us included): B2's active list
  std::uint32_t pod_gpus_;      // every possible sender has its receive pages
  std::vector<std::uint64_t> ring_frames_;  // the ring pages' VRAM frames, in key order
  // Its return from a reset, by the reset it ends (an earlier reset's is stale).
  std::uint32_t resets_ = 0;
  TimedQueue<std::uint32_t> up_;
};

}  // namespace podsim
