#pragma once

#include "sim/base/params.hpp"
#include "sim/base/units.hpp"

namespace podsim::driver {

// The kernel driver's own costs and limits. Timeouts follow the amdgpu snapshot (§10).
struct DriverConfig {
  Time ioctl_latency = Time::us(2);
  Time irq_handler_latency = Time::us(1);
  Time pte_update_latency = Time::ns(20);
  Time tlb_flush_latency = Time::us(1);
  Time response_timeout = Time::ms(5000);
  std::uint32_t accel_max = 256;

  template <class V>
  void visit(V& v) {
    v.field("ioctl_latency", ioctl_latency, "time of one user API call (system call and ioctl)");
    v.field("irq_handler_latency", irq_handler_latency,
            "driver time to take one protocol message from the interrupt ring and dispatch it");
    v.field("pte_update_latency", pte_update_latency,
            "CPU time to write one 4 KiB PTE (GPUVM or NPA VM)");
    v.field("tlb_flush_latency", tlb_flush_latency, "a heavyweight local TLB flush");
    v.field("response_timeout", response_timeout,
            "how long a driver waits for HELLO_ACK or NPA_RSP (snapshot: 5 s)",
            at_least(Time::ns(1)));
    v.field("accel_max", accel_max,
            "highest accelerator count the driver supports (snapshot ACCEL_MAX: 256; UALink "
            "allows 1024)",
            between<std::uint32_t>(1, 1024));
  }
};

}  // namespace podsim::driver
