#pragma once

#include <array>
#include <span>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

// How control messages travel (docs/driver-model.md, "transport").
enum class MailboxTransport : std::uint8_t { NpaWrites, ControlClass };
inline constexpr std::array<EnumName<MailboxTransport>, 2> kMailboxTransportNames{{
    {"npa_writes", MailboxTransport::NpaWrites,
     "as the driver does: ring-slot, write-pointer and write-back writes through ports, "
     "switches, the receiver's NPA MMU and VRAM in the data traffic classes, and a doorbell, "
     "each message on the next plane in turn"},
    {"control_class", MailboxTransport::ControlClass,
     "what-if: a traffic class of their own (served first), on plane 0, straight to the "
     "receiver's firmware (no NPA MMU, no VRAM)"},
}};

struct MailboxConfig {
  Time firmware_latency = Time::us(1);
  Time interrupt_latency = Time::us(2);
  Time tlb_invalidate_latency = Time::us(1);
  std::uint32_t ring_slots = 64;
  Time firmware_load_latency = Time::us(100);
  MailboxTransport transport = MailboxTransport::NpaWrites;

  template <class V>
  void visit(V& v) {
    v.field("firmware_latency", firmware_latency,
            "receiver firmware time to take one command from a ring (reading its write "
            "pointer and slot from VRAM included)");
    v.field("interrupt_latency", interrupt_latency,
            "from firmware raising the interrupt to the driver's handler running");
    v.field("tlb_invalidate_latency", tlb_invalidate_latency,
            "firmware time to carry out a remote TLB shootdown (a full GPUVM TLB flush)");
    v.field("ring_slots", ring_slots,
            "64-byte slots in each per-sender ring (one stays empty, so slots-1 in flight)",
            between<std::uint32_t>(2, 64));
    v.field("firmware_load_latency", firmware_load_latency,
            "activation: from the driver loading the rings' metadata into the firmware to the "
            "firmware reporting READY (not from the snapshot: an assumption)");
    v.choice("transport", transport, "how control messages travel",
             std::span<const EnumName<MailboxTransport>>(kMailboxTransportNames));
  }
};

}  // namespace podsim
