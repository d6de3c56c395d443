#include "models/mailbox/firmware_mailbox.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

namespace podsim {

namespace {
constexpr std::uint32_t kCommandBytes = 64;
constexpr std::uint32_t kPointerBytes = 2;       // a write pointer or write-back (npa_writes)
constexpr std::uint32_t kDoorbellBytes = 4;      // a doorbell (npa_writes)
constexpr std::uint32_t kControlSmallBytes = 8;  // control_class: a write pointer + doorbell,
                                                 // or a write-back
// A write's data: what lands in memory first ([0, 16): a ring slot's command; [0, 2): a
// pointer's value), then what the model reads back: [32] the command kind, [36] the ring,
// [40, 44) seq, [44, 48) status, [48, 52) the sender's generation.
}  // namespace

FirmwareMailbox::FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg,
                                 AccelId self, NpaAddrMode mode, PacketPool& pool,
                                 Dispatcher& events)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      mode_(mode),
      pool_(pool),
      arrivals_(events, queue_name(*this, "arrivals"),
                [this](tlm::tlm_generic_payload* gp) { arrive(gp); }),
      landings_(events, queue_name(*this, "landings"), [this](const Part& p) { handle(p); }),
      firmware_(events, queue_name(*this, "firmware"),
                [](std::function<void()>& work) { work(); }) {
  from_ports.register_nb_transport_fw(this, &FirmwareMailbox::fw);
  to_ports.register_nb_transport_bw(this, &FirmwareMailbox::bw);
}

void FirmwareMailbox::end_of_elaboration() {
  for (unsigned i = 0; i < to_ports.size(); ++i)
    to_port_lanes_.emplace_back(
        [this, i] { return to_ports[static_cast<int>(i)]; },
        [](tlm::tlm_generic_payload& gp, const sc_core::sc_time&) { gp.release(); });
}

FirmwareMailbox::RingState& FirmwareMailbox::ring_state(PeerRings& v, AccelId peer, unsigned ring) {
  return v[peer][ring];  // a node: references stay valid as other peers are added
}

std::uint32_t FirmwareMailbox::in_flight(AccelId dst, unsigned ring) const {
  auto it = tx_.find(dst);
  if (it == tx_.end()) return 0;
  const RingState& r = it->second[ring];
  return r.next_seq - r.acked;
}

std::optional<std::uint32_t> FirmwareMailbox::send(AccelId dst, const FwCommand& cmd) {
  const unsigned ring = cmd.kind == FwCommandKind::TlbInv ? 1 : 0;
  RingState& r = ring_state(tx_, dst, ring);
  if (r.next_seq - r.acked + 1 >= cfg_.ring_slots) {
    ring_full_.inc();
    return std::nullopt;
  }
  const std::uint32_t seq = r.next_seq++;
  if (r.sent_at.empty()) r.sent_at.resize(cfg_.ring_slots);
  r.sent_at[seq % cfg_.ring_slots] = sim_now();
  sent_.inc();
  const std::uint32_t update_wb = r.started ? 0 : 1;  // carried in the status field
  r.started = true;
  const auto gen = static_cast<std::uint32_t>(epoch_);
  const Time delay = std::exchange(send_delay_, Time{});  // a fault step's
  // The driver rings each message's doorbell through the next port in turn; the message's
  // other writes go the same way. The control class has plane 0 only.
  const std::uint32_t plane = cfg_.transport == MailboxTransport::NpaWrites
                                  ? static_cast<std::uint32_t>(messages_sent_++ % to_ports.size())
                                  : 0;
  emit(dst, MailboxWrite::RingSlot, ring, seq, &cmd, update_wb, gen, plane, delay);
  if (cfg_.transport == MailboxTransport::NpaWrites)
    emit(dst, MailboxWrite::WritePointer, ring, seq, nullptr, 0, gen, plane, delay);
  emit(dst, MailboxWrite::Doorbell, ring, seq, nullptr, 0, gen, plane, delay);
  return seq;
}

void FirmwareMailbox::emit(AccelId dst, MailboxWrite kind, unsigned ring, std::uint32_t seq,
                           const FwCommand* cmd, std::uint32_t status, std::uint32_t gen,
                           std::uint32_t plane, Time delay) {
  tlm::tlm_generic_payload& gp = pool_.acquire();
  Access& a = access_of(gp);
  const bool npa_writes = cfg_.transport == MailboxTransport::NpaWrites;
  a.kind = npa_writes ? PacketKind::Request : PacketKind::Control;
  a.op = AccessOp::Write;
  a.posted = npa_writes;
  a.mailbox = kind;
  // Its own ID (the top bit set: never an access's): packets due at the same time are served
  // in ID order, so the order of control packets never rests on when each was queued.
  a.id = 1ull << 63 | static_cast<std::uint64_t>(self_) << 48 | ++packets_emitted_;
  a.src = self_;
  a.dst = dst;
  a.route_to = dst;
  a.plane = plane;
  const std::uint32_t slot = seq % cfg_.ring_slots;
  switch (kind) {
    case MailboxWrite::RingSlot:
      a.size = kCommandBytes;
      a.npa = ring_slot_npa(mode_, dst, self_, ring, slot);
      break;
    case MailboxWrite::WritePointer:
      a.size = kPointerBytes;
      a.npa = pointer_npa(mode_, dst, self_, ring, false);
      break;
    case MailboxWrite::Writeback:
      a.size = npa_writes ? kPointerBytes : kControlSmallBytes;
      a.npa = pointer_npa(mode_, dst, self_, ring, true);
      break;
    default:
      a.size = npa_writes ? kDoorbellBytes : kControlSmallBytes;
      a.npa = doorbell_npa(dst, a.plane, ring);
      break;
  }
  a.issued = sim_now() + delay;
  std::memset(a.data.data(), 0, 64);
  a.data_bytes = 64;  // the fields below, beyond `size` too: the receiver reads them all
  if (cmd) {
    std::memcpy(&a.data[0], cmd->dw.data(), 16);
    a.data[32] = static_cast<unsigned char>(cmd->kind);
  } else {
    const auto pointer = static_cast<std::uint16_t>(seq + 1);
    std::memcpy(&a.data[0], &pointer, 2);
  }
  a.data[36] = static_cast<unsigned char>(ring);
  std::memcpy(&a.data[40], &seq, 4);
  std::memcpy(&a.data[44], &status, 4);
  std::memcpy(&a.data[48], &gen, 4);
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_address(a.npa);
  gp.set_data_length(a.size);
  to_port_lanes_[a.plane].send(gp, to_sc(delay));
}

FirmwareMailbox::Part FirmwareMailbox::part_of(const Access& a) {
  Part p;
  p.kind = a.mailbox;
  p.from = a.src;
  p.ring = a.data[36] % kRings;
  std::memcpy(&p.seq, &a.data[40], 4);
  std::memcpy(&p.status, &a.data[44], 4);
  std::memcpy(&p.gen, &a.data[48], 4);
  p.plane = a.plane;
  std::memcpy(p.cmd.dw.data(), &a.data[0], 16);
  p.cmd.kind = static_cast<FwCommandKind>(a.data[32]);
  return p;
}

tlm::tlm_sync_enum FirmwareMailbox::fw(int, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                       sc_core::sc_time& d) {
  if (ph != tlm::BEGIN_REQ) phase_error(name(), ph);
  return accept_request(arrivals_, gp, ph, d);
}

// Commands get no answer; a port that answers anyway ends the transaction here.
tlm::tlm_sync_enum FirmwareMailbox::bw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                       sc_core::sc_time&) {
  RequestLane& lane = to_port_lanes_[static_cast<std::size_t>(id)];
  if (ph == tlm::END_REQ) return lane.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  lane.begin_response(gp);
  gp.release();
  return tlm::TLM_COMPLETED;
}

void FirmwareMailbox::arrive(tlm::tlm_generic_payload* gp) {
  const Part p = part_of(access_of(*gp));
  gp->release();
  handle(p);
}

void FirmwareMailbox::landed(const Access& a, Time at) {
  landed_.inc();
  landed_bytes_.inc(a.size);
  landings_.push(at, part_of(a), a.id);
}

void FirmwareMailbox::start_receiving(RingState& r, std::uint32_t gen) {
  r = RingState{};
  r.known = true;
  r.gen = gen;
  r.slots.assign(cfg_.ring_slots, FwCommand{});
  r.slot_seq.assign(cfg_.ring_slots, 0);
  r.slot_plane.assign(cfg_.ring_slots, 0);
  r.filled.assign(cfg_.ring_slots, false);
}

void FirmwareMailbox::handle(const Part& p) {
  if (down_) {
    dropped_.inc();
    return;
  }
  if (p.kind == MailboxWrite::Writeback) {
    if (p.gen != static_cast<std::uint32_t>(epoch_)) {  // for a command we sent before a reset
      stale_.inc();
      return;
    }
    RingState& r = ring_state(tx_, p.from, p.ring);
    // The read pointer moves past it, and so past any command before it that was lost.
    if (p.seq < r.next_seq && p.seq + 1 > r.acked) r.acked = p.seq + 1;
    if (!r.sent_at.empty()) round_trip_.record(sim_now() - r.sent_at[p.seq % cfg_.ring_slots]);
    if (on_writeback_) on_writeback_(p.from, p.ring, p.seq, p.status);
    return;
  }
  RingState& r = ring_state(rx_, p.from, p.ring);
  if (!r.known || p.gen > r.gen) start_receiving(r, p.gen);
  if (p.gen < r.gen) {
    stale_.inc();
    return;
  }
  switch (p.kind) {
    case MailboxWrite::RingSlot: {
      // UPDATE_WB: take up from here; a receiver that restarted takes up from what it finds.
      if (p.status != 0 || (!r.started && restarted_)) {
        r.started = true;
        r.consumed = p.seq;
      }
      if (r.started && p.seq < r.consumed) {
        stale_.inc();
        return;
      }
      const std::uint32_t i = p.seq % cfg_.ring_slots;
      r.slots[i] = p.cmd;
      if (corrupt_left_ > 0) {  // a fault step's: the firmware will read garbage
        --corrupt_left_;
        corrupted_.inc();
        r.slots[i].kind = FwCommandKind{};
      }
      r.slot_seq[i] = p.seq;
      r.slot_plane[i] = p.plane;
      r.filled[i] = true;
      break;
    }
    case MailboxWrite::WritePointer: r.written = std::max(r.written, p.seq + 1); break;
    case MailboxWrite::Doorbell:
      r.rung = std::max(r.rung, p.seq + 1);
      // control_class: the doorbell carries the write pointer
      if (cfg_.transport == MailboxTransport::ControlClass) r.written = r.rung;
      break;
    default: break;
  }
  take(p.from, p.ring, r);
}

void FirmwareMailbox::load() {
  restart_rings();  // their metadata loaded anew
  halted_ = false;
  // A stalled firmware (a fault step's) finishes loading only once the stall is over.
  ready_at_ = std::max(sim_now() + cfg_.firmware_load_latency, firmware_free_);
  firmware_free_ = ready_at_;
  // What landed while it was halted it takes once it is up.
  firmware_.push(ready_at_, [this, epoch = epoch_] {
    if (down_ || halted_ || epoch != epoch_) return;
    for (auto& [peer, rings] : rx_)
      for (unsigned ring = 0; ring < kRings; ++ring)
        take(peer, ring, rings[ring]);
  });
}

void FirmwareMailbox::take(AccelId from, unsigned ring, RingState& r) {
  if (halted_) return;
  // Every command up to the write pointer and the doorbell, in order, each once it has landed.
  while (r.started && r.consumed < std::min(r.written, r.rung)) {
    const std::uint32_t i = r.consumed % cfg_.ring_slots;
    if (!r.filled[i] || r.slot_seq[i] != r.consumed) break;
    const std::uint32_t s = r.consumed++;
    r.filled[i] = false;
    const FwCommand c = r.slots[i];
    const std::uint32_t plane = r.slot_plane[i];  // the write-back goes back that way
    received_.inc();
    if (drops_left_ > 0) {  // a fault step's: lost, with no write-back
      --drops_left_;
      commands_lost_.inc();
      continue;
    }
    const Time start = std::max(sim_now(), firmware_free_);
    Time done = start + cfg_.firmware_latency;
    // A fault step's error status: the command is answered with it, not carried out; a
    // command of no kind the firmware knows (a corrupted slot) is answered 2, bad command.
    std::uint32_t error = 0;
    if (c.kind != FwCommandKind::Int && c.kind != FwCommandKind::TlbInv) {
      error = 2;
    } else if (errors_left_ > 0) {
      --errors_left_;
      error = error_status_;
    }
    if (c.kind == FwCommandKind::TlbInv && error == 0) done += cfg_.tlb_invalidate_latency;
    firmware_free_ = done;
    firmware_.push(done, [this, from, ring, s, c, error, plane, gen = r.gen, epoch = epoch_] {
      if (down_ || epoch != epoch_) return;
      if (error != 0) {
        errors_answered_.inc();
        emit(from, MailboxWrite::Writeback, ring, s, nullptr, error, gen, plane);
        return;
      }
      if (c.kind == FwCommandKind::TlbInv) {
        shootdowns_.inc();
        if (on_tlb_invalidate_) on_tlb_invalidate_();
      }
      emit(from, MailboxWrite::Writeback, ring, s, nullptr, 0, gen, plane);
      if (c.kind == FwCommandKind::Int)
        firmware_.push(sim_now() + cfg_.interrupt_latency, [this, from, c, epoch] {
          if (down_ || epoch != epoch_) return;
          interrupts_raised_.inc();
          if (on_interrupt_) on_interrupt_(from, c);
        });
    });
  }
}

void FirmwareMailbox::answer_with_error(std::uint32_t status, std::uint32_t count) {
  error_status_ = status;
  errors_left_ = count;
}

void FirmwareMailbox::restart_rings() {
  // What either side had in its rings is gone (work queued for them abandoned); our next
  // commands carry UPDATE_WB, and senders' rings are taken up as found.
  ++epoch_;
  restarted_ = true;
  tx_.clear();
  rx_.clear();
}

void FirmwareMailbox::reset() {
  restart_rings();
  halted_ = false;  // the device comes back activated (its down time covers the bring-up)
  ready_at_ = Time{};
  errors_left_ = 0;  // the firmware starts afresh
  drops_left_ = 0;
  corrupt_left_ = 0;
  send_delay_ = Time{};
  firmware_free_ = sim_now();
}

void FirmwareMailbox::digest(Digest& d) const {
  for (const PeerRings* side : {&tx_, &rx_}) {
    for (const auto& [peer, rings] : *side) {
      for (unsigned ring = 0; ring < kRings; ++ring) {
        const RingState& r = rings[ring];
        if (!r.started) continue;
        std::uint64_t pending = 0;
        for (bool f : r.filled)
          pending += f;
        d.add(peer).add(ring).add(r.next_seq - r.acked).add(pending);
      }
    }
    d.add(UINT64_MAX);
  }
}

void FirmwareMailbox::direct_ring(AccelId peer, unsigned ring, bool sender,
                                  std::uint32_t commands) {
  RingState& r = ring_state(sender ? tx_ : rx_, peer, ring);
  r.started = true;
  if (sender) {
    r.next_seq = commands;
    r.acked = commands;
  } else {
    start_receiving(r, 0);  // direct setup comes before any reset: generation 0
    r.started = true;
    r.consumed = r.written = r.rung = commands;
  }
}

}  // namespace podsim
