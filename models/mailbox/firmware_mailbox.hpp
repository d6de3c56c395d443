// FirmwareMailbox: how drivers talk to each other (protocol reference §8). Each sender has
// two 64-slot rings at each receiver, one for interrupts and one for TLB shootdowns, in the
// receiver's VRAM (its receive pages, models/npa_mmu/npa_layout.hpp). Sending a command is
// three posted writes over the fabric: the 64-byte command into the receiver's ring slot, the
// new write pointer, and the doorbell. By default (transport npa_writes) they are ordinary
// UALink writes in the data traffic classes, each message on the next plane in turn: the ring
// slot and write pointer go through the receiver's NPA MMU into its VRAM, which tells the
// firmware when each has landed (`landed`); the doorbell goes to the firmware. The firmware
// takes a command once its slot has landed and both the write pointer and a doorbell cover it,
// in sequence order, one at a time (firmware latency); it writes the sender's write-back entry
// (another write through the sender's NPA MMU into its VRAM) to report each consumed, and
// raises an interrupt for the driver (INT) or flushes the GPUVM TLBs (TLB_INV). The sender's
// driver polls its write-back entry (see DriverShell). The what-if transport control_class
// sends them instead as control packets in a class of their own, on plane 0, straight to the
// firmware.
// A ring's first command after the sender (re)starts carries UPDATE_WB, which makes the
// receiver's firmware take up the ring from that command (every write carries the sender's
// generation, so what an earlier one left in flight is ignored); a receiver that (re)started
// takes up each sender's ring from the first command it sees. So rings survive either side's
// reset, as long as one command still gets through: the sender counts what is in flight from
// the write-back read pointer, which a consumed command moves past every one before it (63
// lost in a row fill the ring for good, as in the snapshot).
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <vector>

#include "models/mailbox/mailbox_config.hpp"
#include "models/npa_mmu/npa_layout.hpp"
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

  // One per switch plane, bound in plane order (the ports' GPU side).
  tlm_utils::multi_passthrough_initiator_socket<FirmwareMailbox> to_ports{"to_ports"};
  tlm_utils::multi_passthrough_target_socket<FirmwareMailbox> from_ports{"from_ports"};

  using InterruptHandler = std::function<void(AccelId from, const FwCommand& cmd)>;
  using WritebackHandler =
      std::function<void(AccelId receiver, unsigned ring, std::uint32_t seq, std::uint32_t status)>;

  FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg, AccelId self,
                  NpaAddrMode mode, PacketPool& pool, Dispatcher& events);

  // Writes `cmd` into `dst`'s ring now and rings the doorbell. Its sequence number, or
  // nothing when the ring is full (-ENOSPC). Command kind picks the ring.
  std::optional<std::uint32_t> send(AccelId dst, const FwCommand& cmd);

  void set_interrupt_handler(InterruptHandler h) { on_interrupt_ = std::move(h); }
  void set_writeback_handler(WritebackHandler h) { on_writeback_ = std::move(h); }
  void set_tlb_invalidate_handler(std::function<void()> h) { on_tlb_invalidate_ = std::move(h); }
  // Memory says one of the mailbox's writes (a ring slot, write pointer or write-back, in its
  // receive pages) lands at `at`.
  void landed(const Access& a, Time at);

  // Activation: the firmware loads the rings' metadata, READY firmware_load_latency later (or
  // when a stall ends, if later); halted (deactivation, or a pod whose bring-up has not run
  // yet) it takes no command.
  void load();
  bool ready() const { return !halted_ && sim_now() >= ready_at_; }
  void halt() { halted_ = true; }
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
  // senders polling past their write-back timeout give up with -ETIME), nor finishes loading.
  void stall_until(Time until) {
    firmware_free_ = std::max(firmware_free_, until);
    if (!halted_ && sim_now() < ready_at_) ready_at_ = std::max(ready_at_, until);  // loading
  }
  // The next `count` commands this firmware takes are lost: neither carried out nor
  // reported consumed (their senders poll until ETIME; their ring slots stay in flight until
  // a later command's write-back moves the read pointer past them).
  void drop_next(std::uint32_t count) { drops_left_ = count; }
  // The next `count` commands written into this GPU's rings land corrupted: the firmware
  // reads a bad command, and answers it with status 2 (bad command), not carried out.
  void corrupt_next(std::uint32_t count) { corrupt_left_ = count; }
  // The next command this GPU sends leaves `by` late (its three writes together).
  void delay_next_send(Time by) { send_delay_ = by; }
  // Commands written into `dst`'s ring and not yet behind its write-back read pointer (a
  // write-back reports a command consumed, and with it every one before it, as the driver
  // reads it: reference §8). A ring holds at most ring_slots - 1.
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
  // One write of the control path, as the firmware reads it.
  struct Part {
    MailboxWrite kind = MailboxWrite::None;
    AccelId from = 0;
    unsigned ring = 0;
    std::uint32_t seq = 0;     // the command's sequence number (its write pointer: seq + 1)
    std::uint32_t status = 0;  // a ring slot: UPDATE_WB; a write-back: the firmware's status
    std::uint32_t gen = 0;     // the sender's generation (its resets)
    std::uint32_t plane = 0;   // the plane it came on
    FwCommand cmd;
  };
  struct RingState {               // one ring of one peer, on the sending or the receiving side
    std::uint32_t next_seq = 0;    // sender: next sequence number
    std::uint32_t acked = 0;       // sender: the write-back read pointer (commands before it
                                   // consumed); next_seq - acked are in flight
    std::vector<Time> sent_at;     // sender: when each slot's command was sent
    bool started = false;          // sender: UPDATE_WB sent; receiver: read pointer set
    bool known = false;            // receiver: a generation of this sender seen
    std::uint32_t gen = 0;         // receiver: the sender's generation
    std::uint32_t consumed = 0;    // receiver: next sequence number to take
    std::uint32_t written = 0;     // receiver: the write pointer landed (commands before it)
    std::uint32_t rung = 0;        // receiver: the doorbells taken (commands before it)
    std::vector<FwCommand> slots;  // receiver: the ring
    std::vector<std::uint32_t> slot_seq;    // receiver: which command each slot holds
    std::vector<std::uint32_t> slot_plane;  // receiver: the plane it came on
    std::vector<bool> filled;               // receiver: slot landed since last taken
  };
  tlm::tlm_sync_enum fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  tlm::tlm_sync_enum bw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  void end_of_elaboration() override;
  static Part part_of(const Access& a);
  void arrive(tlm::tlm_generic_payload* gp);
  void handle(const Part& p);
  // The firmware takes every command of `from`'s ring it may now take.
  void take(AccelId from, unsigned ring, RingState& r);
  void emit(AccelId dst, MailboxWrite kind, unsigned ring, std::uint32_t seq, const FwCommand* cmd,
            std::uint32_t status, std::uint32_t gen, std::uint32_t plane, Time delay = Time{});
  // Per peer, made when the peer is first talked to: a 1,024-GPU pod talks to few peers each,
  // and a slot for every possible peer cost 16 MB across the pod. Ordered by peer.
  using PeerRings = std::map<AccelId, std::array<RingState, kRings>>;
  RingState& ring_state(PeerRings& v, AccelId peer, unsigned ring);
  void start_receiving(RingState& r, std::uint32_t gen);
  void restart_rings();

  MailboxConfig cfg_;
  AccelId self_;
  NpaAddrMode mode_;
  PacketPool& pool_;
  InterruptHandler on_interrupt_;
  WritebackHandler on_writeback_;
  std::function<void()> on_tlb_invalidate_;
  bool down_ = false;
  PeerRings tx_;  // by receiver
  PeerRings rx_;  // by sender
  Time firmware_free_;
  TimedQueue<tlm::tlm_generic_payload*> arrivals_;  // from the ports
  TimedQueue<Part> landings_;                       // from memory
  TimedQueue<std::function<void()>> firmware_;
  std::vector<RequestLane> to_port_lanes_;  // to_ports' request sides (posted writes)
  bool restarted_ = false;                  // reset at least once (takes up rings as found)
  bool halted_ = false;
  Time ready_at_;

  StatGroup stats_;
  Counter sent_{stats_, "commands_sent", "count", "commands written into remote rings"};
  Counter received_{stats_, "commands_received", "count", "commands taken from this GPU's rings"};
  Counter interrupts_raised_{stats_, "interrupts", "count", "interrupts raised to the driver"};
  Counter shootdowns_{stats_, "tlb_shootdowns", "count", "remote TLB shootdowns carried out"};
  Counter ring_full_{stats_, "ring_full", "count", "sends refused because the ring was full"};
  Counter dropped_{stats_, "dropped", "count", "packets dropped while the device was down"};
  Distribution round_trip_{stats_, "round_trip", "ns",
                           "from a command's send to its write-back reaching the sender (the "
                           "transport and the receiver's firmware; no polling)",
                           kPsPerNs};
  Counter landed_{stats_, "writes_landed", "count",
                  "the control path's writes (ring slots, write pointers, write-backs) that "
                  "landed in this GPU's VRAM through its NPA MMU"};
  Counter landed_bytes_{stats_, "bytes_landed", "bytes", "the bytes of those writes"};
  Counter stale_{stats_, "stale_writes", "count",
                 "ring writes ignored: from a sender's earlier generation, or for a command "
                 "already taken"};
  Counter errors_answered_{
      stats_, "errors_answered", "count",
      "commands answered with an error status (a fault step), not carried out"};
  std::uint32_t error_status_ = 0, errors_left_ = 0, drops_left_ = 0, corrupt_left_ = 0;
  Time send_delay_;
  Counter corrupted_{stats_, "ring_slots_corrupted", "count",
                     "commands that landed corrupted in this GPU's rings (a fault step)"};
  Counter commands_lost_{stats_, "commands_lost", "count",
                         "commands a fault step made the firmware lose (no write-back)"};
  std::uint64_t epoch_ = 0;  // firmware work queued before a reset is abandoned; our generation
  std::uint64_t packets_emitted_ = 0;  // control packets sent (their IDs)
  std::uint64_t messages_sent_ = 0;    // the planes are taken in turn, message by message
};

}  // namespace podsim
