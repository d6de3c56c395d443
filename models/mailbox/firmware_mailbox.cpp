#include "models/mailbox/firmware_mailbox.hpp"

#include <algorithm>
#include <cstring>

namespace podsim {

namespace {
constexpr std::uint32_t kCommandBytes = 64;

void encode(const FwCommand& c, unsigned char* out) {
  std::memset(out, 0, kCommandBytes);
  out[0] = static_cast<unsigned char>(c.kind);
  std::memcpy(out + 4, &c.seq, 4);
  std::memcpy(out + 8, c.dw.data(), 16);
}

FwCommand decode(const unsigned char* in) {
  FwCommand c;
  c.kind = static_cast<FwCommandKind>(in[0]);
  std::memcpy(&c.seq, in + 4, 4);
  std::memcpy(c.dw.data(), in + 8, 16);
  return c;
}
}  // namespace

FirmwareMailbox::FirmwareMailbox(sc_core::sc_module_name name, const MailboxConfig& cfg,
                                 AccelId self, PacketPool& pool)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      pool_(pool),
      in_flight_(kMaxAccels, 0),
      next_seq_(kMaxAccels, 0),
      sent_at_(kMaxAccels) {
  from_port.register_nb_transport_fw(this, &FirmwareMailbox::fw);
  spawn_method("arrive", arrivals_.event(),
               [this] { arrivals_.drain([this](tlm::tlm_generic_payload* gp) { take(gp); }); });
  spawn_method("interrupt", interrupts_.event(), [this] {
    interrupts_.drain([this](const Delivery& d) {
      interrupts_raised_.inc();
      if (handler_) handler_(d.from, d.cmd);
    });
  });
}

bool FirmwareMailbox::send(AccelId dst, const FwCommand& cmd_in, Time delay) {
  if (in_flight_[dst] + 1 >= cfg_.ring_slots) {
    ring_full_.inc();
    return false;
  }
  FwCommand cmd = cmd_in;
  cmd.seq = next_seq_[dst]++;
  auto& stamps = sent_at_[dst];
  if (stamps.empty()) stamps.resize(cfg_.ring_slots);
  stamps[cmd.seq % cfg_.ring_slots] = sim_now() + delay;
  ++in_flight_[dst];
  sent_.inc();
  emit(dst, cmd, delay);
  return true;
}

void FirmwareMailbox::emit(AccelId dst, const FwCommand& cmd, Time delay) {
  tlm::tlm_generic_payload& gp = pool_.acquire();
  Access& a = access_of(gp);
  a.kind = PacketKind::Control;
  a.op = AccessOp::Write;
  a.src = self_;
  a.dst = dst;
  a.route_to = dst;
  a.size = kCommandBytes;
  a.issued = sim_now() + delay;
  encode(cmd, a.data.data());
  gp.set_command(tlm::TLM_WRITE_COMMAND);
  gp.set_data_length(kCommandBytes);
  tlm::tlm_phase ph = tlm::BEGIN_REQ;
  sc_core::sc_time d = to_sc(delay);
  to_port->nb_transport_fw(gp, ph, d);
}

tlm::tlm_sync_enum FirmwareMailbox::fw(tlm::tlm_generic_payload& gp, tlm::tlm_phase&,
                                       sc_core::sc_time& d) {
  arrivals_.push(sim_now() + from_sc(d), &gp);
  return tlm::TLM_ACCEPTED;
}

void FirmwareMailbox::take(tlm::tlm_generic_payload* gp) {
  const Access& a = access_of(*gp);
  const FwCommand cmd = decode(a.data.data());
  const AccelId from = a.src;
  gp->release();

  const Time now = sim_now();
  if (cmd.kind == FwCommandKind::WriteBack) {
    // Our command `seq` to `from` was consumed: its ring slot is free again.
    if (in_flight_[from] > 0) --in_flight_[from];
    ack_latency_.record(now - sent_at_[from][cmd.seq % cfg_.ring_slots]);
    return;
  }
  received_.inc();
  const Time start = std::max(now, firmware_free_);
  firmware_free_ = start + cfg_.firmware_latency;
  FwCommand wb;
  wb.kind = FwCommandKind::WriteBack;
  wb.seq = cmd.seq;
  emit(from, wb, firmware_free_ - now);
  interrupts_.push(firmware_free_ + cfg_.interrupt_latency, Delivery{from, cmd});
}

}  // namespace podsim
