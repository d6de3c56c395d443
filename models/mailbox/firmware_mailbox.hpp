// FirmwareMailbox: how drivers talk to each other (protocol reference §8). Each sender has
// two 64-slot rings at each receiver, one for interrupts and one for TLB shootdowns. Sending
// writes the 64-byte command into the receiver's ring slot and then rings its doorbell, both
// posted writes over the fabric. The receiver's firmware takes the commands one at a time
// (firmware latency), writes the sender's write-back slot (another write over the fabric) to
// report each consumed, and raises an interrupt for the driver (INT) or flushes the GPUVM
// TLBs (TLB_INV). The sender's driver polls its write-back slot (see DriverShell).
// A ring's first command after the sender (re)starts carries UPDATE_WB, which makes the
// receiver's firmware take up the ring from that command; a receiver that (re)started takes
// up each sender's ring from the first command it sees. So rings survive either side's reset.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "models/mailbox/mailbox_config.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

enum class FwCommandKind : std::uint8_t {
  Int = 1,     // a 4-dword protocol message for the receiver's driver
  TlbInv = 2,  // a remote TLB shootdown (the snapshot always flushes everything)
};

struct FwCommand {
  FwCommandKind kind = FwCommandKind::Int;
  std::array<std::uint32_t, 4> dw{};
};

class FirmwareMailbox final : public sc_core::sc_module, public HasStats {
 public:
  static constexpr unsigned kRings = 2;  // 0: interrupts, 1: TLB shootdowns

  tlm_utils::simple_initiator_socket<FirmwareMailbox> to_port{"to_port"};
  tlm_utils::simple_target_socket<FirmwareMailbox> from_port{"from_port"};

  using InterruptHandler = std::function<void(AccelId from, const FwCommand& cmd)>;
  using WritebackHandler =
      std::function<void(AccelId receiver, unsigned ring, std::uint32_t seq, std::uint32_t status)>;

  FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg, AccelId self,
                  PacketPool& pool, Dispatcher& events);

  // Writes `cmd` into `dst`'s ring now and rings the doorbell. Its sequence number, or
  // nothing when the ring is full (-ENOSPC). Command kind picks the ring.
  std::optional<std::uint32_t> send(AccelId dst, const FwCommand& cmd);

  void set_interrupt_handler(InterruptHandler h) { on_interrupt_ = std::move(h); }
  void set_writeback_handler(WritebackHandler h) { on_writeback_ = std::move(h); }
  void set_tlb_invalidate_handler(std::function<void()> h) { on_tlb_invalidate_ = std::move(h); }

  // Device reset: rings, sequence numbers and pending firmware work are gone. While down,
  // everything that arrives is dropped.
  void reset();
  void set_down(bool down) { down_ = down; }
  // Faults, for studies of what the pod does when firmware misbehaves (scenario `fault` steps):
  // the next `count` commands this firmware takes it answers with `status` (1-9, the
  // firmware's error codes) instead of carrying them out: no interrupt, no TLB flush; the
  // sender sees -ECOMM.
  void answer_with_error(std::uint32_t status, std::uint32_t count);
  // The firmware takes no command before `until` (what arrives meanwhile waits in its ring;
  // senders polling past their write-back timeout give up with -ETIME).
  void stall_until(Time until) { firmware_free_ = std::max(firmware_free_, until); }
  // The next `count` commands this firmware takes are lost: neither carried out nor
  // reported consumed (their senders poll until ETIME; their ring slots stay in flight).
  void drop_next(std::uint32_t count) { drops_left_ = count; }
  std::uint32_t in_flight(AccelId dst, unsigned ring) const;
  // Which rings are set up on each side, and what is in them. Not their sequence numbers: those
  // count the commands a ring has carried (handshake retries included), which decides nothing
  // later (a slot is a sequence number modulo the ring size, and every command is matched to
  // its write-back by its own number).
  void digest(Digest& d) const;
  // As a ring left set up by `commands` commands, nothing in flight, on the sending side
  // (sender) or the receiving side (receiver): what direct setup leaves.
  void direct_ring(AccelId peer, unsigned ring, bool sender, std::uint32_t commands);

  const StatGroup& stat_group() const override { return stats_; }

 private:
  enum class Packet : std::uint8_t { Command = 1, Doorbell = 2, Writeback = 3 };
  struct RingState {               // one ring of one peer, on the sending or the receiving side
    std::uint32_t next_seq = 0;    // sender: next sequence number
    std::uint32_t in_flight = 0;   // sender: written, not yet reported consumed
    bool started = false;          // sender: UPDATE_WB sent; receiver: read pointer set
    std::uint32_t consumed = 0;    // receiver: next sequence number to take
    std::vector<FwCommand> slots;  // receiver: the ring
    std::vector<bool> filled;      // receiver: slot written since last taken
  };
  tlm::tlm_sync_enum fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph, sc_core::sc_time& d);
  void arrive(tlm::tlm_generic_payload* gp);
  void emit(AccelId dst, Packet kind, unsigned ring, std::uint32_t seq, const FwCommand* cmd,
            std::uint32_t status, Time delay);
  // Per peer, made when the peer is first talked to (a 1,024-GPU pod talks to few peers each).
  using PeerRings = std::vector<std::unique_ptr<std::array<RingState, kRings>>>;
  RingState& ring_state(PeerRings& v, AccelId peer, unsigned ring);

  MailboxConfig cfg_;
  AccelId self_;
  PacketPool& pool_;
  InterruptHandler on_interrupt_;
  WritebackHandler on_writeback_;
  std::function<void()> on_tlb_invalidate_;
  bool down_ = false;
  PeerRings tx_;  // by receiver
  PeerRings rx_;  // by sender
  Time firmware_free_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;
  TimedQueue<std::function<void()>> firmware_;
  RequestLane to_port_lane_;  // to_port's request side (commands are posted writes)

  StatGroup stats_;
  Counter sent_{stats_, "commands_sent", "count", "commands written into remote rings"};
  Counter received_{stats_, "commands_received", "count", "commands taken from this GPU's rings"};
  Counter interrupts_raised_{stats_, "interrupts", "count", "interrupts raised to the driver"};
  Counter shootdowns_{stats_, "tlb_shootdowns", "count", "remote TLB shootdowns carried out"};
  Counter ring_full_{stats_, "ring_full", "count", "sends refused because the ring was full"};
  Counter dropped_{stats_, "dropped", "count", "packets dropped while the device was down"};
  Counter errors_answered_{
      stats_, "errors_answered", "count",
      "commands answered with an error status (a fault step), not carried out"};
  std::uint32_t error_status_ = 0, errors_left_ = 0, drops_left_ = 0;
  Counter commands_lost_{stats_, "commands_lost", "count",
                         "commands a fault step made the firmware lose (no write-back)"};
  std::uint64_t epoch_ = 0;            // firmware work queued before a reset is abandoned
  std::uint64_t packets_emitted_ = 0;  // control packets sent (their IDs)
};

}  // namespace podsim
