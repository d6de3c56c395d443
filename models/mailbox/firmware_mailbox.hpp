// FirmwareMailbox: how drivers talk to each other. A command is 64 bytes written into the
// receiver's per-sender ring over the fabric; the receiver's firmware takes it (firmware
// latency, one command at a time), writes the sender's write-back slot to say it consumed it,
// and, for an INT command, raises an interrupt that runs the driver's handler.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <array>
#include <functional>
#include <vector>

#include "models/mailbox/mailbox_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

enum class FwCommandKind : std::uint8_t {
  Int = 1,        // a 4-dword protocol message for the receiver's driver
  TlbInv = 2,     // a remote TLB shootdown
  WriteBack = 3,  // firmware's "consumed" report to the sender (not a ring command)
};

struct FwCommand {
  FwCommandKind kind = FwCommandKind::Int;
  std::uint32_t seq = 0;
  std::array<std::uint32_t, 4> dw{};
};

class FirmwareMailbox final : public sc_core::sc_module, public HasStats {
 public:
  tlm_utils::simple_initiator_socket<FirmwareMailbox, 32, PodProtocol> to_port{"to_port"};
  tlm_utils::simple_target_socket<FirmwareMailbox, 32, PodProtocol> from_port{"from_port"};

  using InterruptHandler = std::function<void(AccelId from, const FwCommand& cmd)>;

  FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg, AccelId self,
                  PacketPool& pool);

  // Writes a command into `dst`'s ring `delay` from now (its slot is taken at once). False
  // when that ring is full (-ENOSPC).
  bool send(AccelId dst, const FwCommand& cmd, Time delay = Time{});
  void set_interrupt_handler(InterruptHandler h) { handler_ = std::move(h); }
  std::uint32_t in_flight(AccelId dst) const { return in_flight_[dst]; }

  const StatGroup& stat_group() const override { return stats_; }

 private:
  struct Delivery {
    AccelId from;
    FwCommand cmd;
  };
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  void take(tlm::tlm_generic_payload* gp);
  void emit(AccelId dst, const FwCommand& cmd, Time delay);

  MailboxConfig cfg_;
  AccelId self_;
  PacketPool& pool_;
  InterruptHandler handler_;
  std::vector<std::uint32_t> in_flight_;
  std::vector<std::uint32_t> next_seq_;
  std::vector<std::vector<Time>> sent_at_;  // per destination, by sequence mod ring_slots
  Time firmware_free_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;
  TimedQueue<Delivery> interrupts_;

  StatGroup stats_;
  Counter sent_{stats_, "commands_sent", "count", "commands written into remote rings"};
  Counter received_{stats_, "commands_received", "count", "commands taken from this GPU's rings"};
  Counter interrupts_raised_{stats_, "interrupts", "count", "interrupts raised to the driver"};
  Counter ring_full_{stats_, "ring_full", "count", "sends refused because the ring was full"};
  Distribution ack_latency_{stats_, "ack_latency", "ns",
                            "from writing a command to seeing it consumed in the write-back slot",
                            kPsPerNs};
};

}  // namespace podsim
