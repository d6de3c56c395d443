#include "models/mailbox/firmware_mailbox.hpp"

#include <algorithm>
#include <cstring>

namespace podsim {

namespace {
constexpr std::uint32_t kCommandBytes = 64;
constexpr std::uint32_t kSmallWriteBytes = 8;  // a write pointer + doorbell, or a write-back
// Layout of a control packet's data: [0] packet kind, [1] ring, [4..8) seq, [8..12) status,
// [16..32) the command's four dwords, [32] the command kind.
}  // namespace

FirmwareMailbox::FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg,
                                 AccelId self, PacketPool& pool, Dispatcher& events)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      pool_(pool),
      tx_(kMaxAccels),
      rx_(kMaxAccels),
      arrivals_(events, queue_name(*this, "arrivals"),
                [this](tlm::tlm_generic_payload* gp) { arrive(gp); }),
      firmware_(events, queue_name(*this, "firmware"), [](std::function<void()>& work) { work(); }),
      to_port_lane_([](tlm::tlm_generic_payload& gp, const sc_core::sc_time&) { gp.release(); }) {
  from_port.register_nb_transport_fw(this, &FirmwareMailbox::fw);
  to_port.register_nb_transport_bw(this, &FirmwareMailbox::bw);
}

FirmwareMailbox::RingState& FirmwareMailbox::ring_state(PeerRings& v, AccelId peer, unsigned ring) {
  if (!v[peer]) v[peer] = std::make_unique<std::array<RingState, kRings>>();
  return (*v[peer])[ring];
}

std::uint32_t FirmwareMailbox::in_flight(AccelId dst, unsigned ring) const {
  return tx_[dst] ? (*tx_[dst])[ring].in_flight : 0;
}

std::optional<std::uint32_t> FirmwareMailbox::send(AccelId dst, const FwCommand& cmd) {
  const unsigned ring = cmd.kind == FwCommandKind::TlbInv ? 1 : 0;
  RingState& r = ring_state(tx_, dst, ring);
  if (r.in_flight + 1 >= cfg_.ring_slots) {
    ring_full_.inc();
    return std::nullopt;
  }
  const std::uint32_t seq = r.next_seq++;
  ++r.in_flight;
  sent_.inc();
  const std::uint32_t update_wb = r.started ? 0 : 1;  // carried in the status field
  r.started = true;
  emit(dst, Packet::Command, ring, seq, &cmd, update_wb, Time{});
  emit(dst, Packet::Doorbell, ring, seq, nullptr, 0, Time{});
  return seq;
}

void FirmwareMailbox::emit(AccelId dst, Packet kind, unsigned ring, std::uint32_t seq,
                           const FwCommand* cmd, std::uint32_t status, Time delay) {
  tlm::tlm_generic_payload& gp = pool_.acquire();
  Access& a = access_of(gp);
  a.kind = PacketKind::Control;
  a.op = AccessOp::Write;
  // Its own ID (the top bit set: never an access's): packets due at the same time are served
  // in ID order, so the order of control packets never rests on when each was queued.
  a.id = 1ull << 63 | static_cast<std::uint64_t>(self_) << 48 | ++packets_emitted_;
  a.src = self_;
  a.dst = dst;
  a.route_to = dst;
  a.size = kind == Packet::Command ? kCommandBytes : kSmallWriteBytes;
  a.issued = sim_now() + delay;
  std::memset(a.data.data(), 0, 64);
  a.data[0] = static_cast<unsigned char>(kind);
  a.data[1] = static_cast<unsigned char>(ring);
  std::memcpy(&a.data[4], &seq, 4);
  std::memcpy(&a.data[8], &status, 4);
  if (cmd) {
    std::memcpy(&a.data[16], cmd->dw.data(), 16);
    a.data[32] = static_cast<unsigned char>(cmd->kind);
  }
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_data_length(a.size);
  to_port_lane_.send(to_port.operator->(), gp, to_sc(delay));
}

tlm::tlm_sync_enum FirmwareMailbox::fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                       sc_core::sc_time& d) {
  if (ph != tlm::BEGIN_REQ) phase_error(name(), ph);
  return accept_request(arrivals_, gp, ph, d);
}

// Commands get no answer; a port that answers anyway ends the transaction here.
tlm::tlm_sync_enum FirmwareMailbox::bw(tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                                       sc_core::sc_time&) {
  if (ph == tlm::END_REQ) return to_port_lane_.end_request(gp);
  if (ph != tlm::BEGIN_RESP) phase_error(name(), ph);
  to_port_lane_.begin_response(gp);
  gp.release();
  return tlm::TLM_COMPLETED;
}

void FirmwareMailbox::arrive(tlm::tlm_generic_payload* gp) {
  const Access& a = access_of(*gp);
  const auto kind = static_cast<Packet>(a.data[0]);
  const unsigned ring = a.data[1] % kRings;
  std::uint32_t seq, status;
  std::memcpy(&seq, &a.data[4], 4);
  std::memcpy(&status, &a.data[8], 4);
  FwCommand cmd;
  std::memcpy(cmd.dw.data(), &a.data[16], 16);
  cmd.kind = static_cast<FwCommandKind>(a.data[32]);
  const AccelId from = a.src;
  gp->release();
  if (down_) {
    dropped_.inc();
    return;
  }

  switch (kind) {
    case Packet::Command: {
      RingState& r = ring_state(rx_, from, ring);
      if (!r.started || status != 0) {  // first command seen, or UPDATE_WB: take up from here
        r.slots.assign(cfg_.ring_slots, FwCommand{});
        r.filled.assign(cfg_.ring_slots, false);
        r.consumed = seq;
        r.started = true;
      }
      r.slots[seq % cfg_.ring_slots] = cmd;
      r.filled[seq % cfg_.ring_slots] = true;
      break;
    }
    case Packet::Doorbell: {
      // Firmware takes every command up to the new write pointer, one at a time.
      RingState& r = ring_state(rx_, from, ring);
      while (r.consumed <= seq && !r.slots.empty() && r.filled[r.consumed % cfg_.ring_slots]) {
        const std::uint32_t s = r.consumed++;
        r.filled[s % cfg_.ring_slots] = false;
        const FwCommand c = r.slots[s % cfg_.ring_slots];
        received_.inc();
        if (drops_left_ > 0) {  // a fault step's: lost, with no write-back
          --drops_left_;
          commands_lost_.inc();
          continue;
        }
        const Time start = std::max(sim_now(), firmware_free_);
        Time done = start + cfg_.firmware_latency;
        // A fault step's error status: the command is answered with it, not carried out.
        std::uint32_t error = 0;
        if (errors_left_ > 0) {
          --errors_left_;
          error = error_status_;
        }
        if (c.kind == FwCommandKind::TlbInv && error == 0) done += cfg_.tlb_invalidate_latency;
        firmware_free_ = done;
        firmware_.push(done, [this, from, ring, s, c, error, epoch = epoch_] {
          if (down_ || epoch != epoch_) return;
          if (error != 0) {
            errors_answered_.inc();
            emit(from, Packet::Writeback, ring, s, nullptr, error, Time{});
            return;
          }
          if (c.kind == FwCommandKind::TlbInv) {
            shootdowns_.inc();
            if (on_tlb_invalidate_) on_tlb_invalidate_();
          }
          emit(from, Packet::Writeback, ring, s, nullptr, 0, Time{});
          if (c.kind == FwCommandKind::Int)
            firmware_.push(sim_now() + cfg_.interrupt_latency, [this, from, c, epoch] {
              if (down_ || epoch != epoch_) return;
              interrupts_raised_.inc();
              if (on_interrupt_) on_interrupt_(from, c);
            });
        });
      }
      break;
    }
    case Packet::Writeback: {
      RingState& r = ring_state(tx_, from, ring);
      if (r.in_flight > 0) --r.in_flight;
      if (on_writeback_) on_writeback_(from, ring, seq, status);
      break;
    }
  }
}

void FirmwareMailbox::answer_with_error(std::uint32_t status, std::uint32_t count) {
  error_status_ = status;
  errors_left_ = count;
}

void FirmwareMailbox::reset() {
  ++epoch_;
  errors_left_ = 0;  // the firmware starts afresh
  drops_left_ = 0;
  for (auto& peer : tx_)
    peer.reset();
  for (auto& peer : rx_)
    peer.reset();
  firmware_free_ = sim_now();
}

void FirmwareMailbox::digest(Digest& d) const {
  for (const PeerRings* side : {&tx_, &rx_}) {
    for (std::size_t peer = 0; peer < side->size(); ++peer) {
      if (!(*side)[peer]) continue;
      for (unsigned ring = 0; ring < kRings; ++ring) {
        const RingState& r = (*(*side)[peer])[ring];
        if (!r.started) continue;
        std::uint64_t pending = 0;
        for (bool f : r.filled)
          pending += f;
        d.add(peer).add(ring).add(r.in_flight).add(pending);
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
    r.in_flight = 0;
  } else {
    r.slots.assign(cfg_.ring_slots, FwCommand{});
    r.filled.assign(cfg_.ring_slots, false);
    r.consumed = commands;
  }
}

}  // namespace podsim
