#pragma once

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

struct MailboxConfig {
  Time firmware_latency = Time::us(1);
  Time interrupt_latency = Time::us(2);
  Time tlb_invalidate_latency = Time::us(1);
  std::uint32_t ring_slots = 64;

  template <class V>
  void visit(V& v) {
    v.field("firmware_latency", firmware_latency,
            "receiver firmware time to take one command from a ring");
    v.field("interrupt_latency", interrupt_latency,
            "from firmware raising the interrupt to the driver's handler running");
    v.field("tlb_invalidate_latency", tlb_invalidate_latency,
            "firmware time to carry out a remote TLB shootdown (a full GPUVM TLB flush)");
    v.field("ring_slots", ring_slots,
            "64-byte slots in each per-sender ring (one stays empty, so slots-1 in flight)",
            between<std::uint32_t>(2, 4096));
  }
};

}  // namespace podsim
