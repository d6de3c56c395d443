#include "driver_model/messages.hpp"

namespace podsim::driver {

std::string_view msg_name(MsgType t) {
  switch (t) {
    case MsgType::Hello: return "HELLO";
    case MsgType::HelloAck: return "HELLO_ACK";
    case MsgType::NpaReq: return "NPA_REQ";
    case MsgType::NpaRsp: return "NPA_RSP";
    case MsgType::NpaFail: return "NPA_FAIL";
    case MsgType::NpaRevoke: return "NPA_REVOKE";
    case MsgType::NpaRelease: return "NPA_RELEASE";
  }
  return "?";
}

Dwords encode(const Message& m) {
  Dwords dw{};
  const auto type = static_cast<std::uint32_t>(m.type);
  const auto lo_hi = static_cast<std::uint32_t>(m.handle.lo >> 32);
  const auto lo_low = static_cast<std::uint32_t>(m.handle.lo) & ~0x3FFu;
  switch (m.type) {
    case MsgType::Hello:
      dw[0] = type | (static_cast<std::uint32_t>(m.hello_recv) << 10) |
              (static_cast<std::uint32_t>(m.hello_sender) << 20);
      break;
    case MsgType::HelloAck: dw[0] = type; break;
    case MsgType::NpaReq:
    case MsgType::NpaRevoke:
    case MsgType::NpaRelease:
      dw[0] = lo_low | type;
      dw[1] = lo_hi;
      dw[2] = static_cast<std::uint32_t>(m.handle.hi);
      dw[3] = static_cast<std::uint32_t>(m.handle.hi >> 32);
      break;
    case MsgType::NpaRsp:
      dw[0] = lo_low | type;
      dw[1] = lo_hi;
      dw[2] = m.size_pages;
      dw[3] = m.npa_page;
      break;
    case MsgType::NpaFail:
      dw[0] = lo_low | type;
      dw[1] = lo_hi;
      dw[2] = static_cast<std::uint32_t>(m.reason);
      break;
  }
  return dw;
}

bool decode(const Dwords& dw, AccelId sender, AccelId self, Message& out) {
  const std::uint32_t type = dw[0] & 0x3FF;
  if (type < 1 || type > 7) return false;
  out = Message{};
  out.type = static_cast<MsgType>(type);
  auto lo_with = [&](AccelId id) {
    return (static_cast<std::uint64_t>(dw[1]) << 32) | (dw[0] & ~0x3FFu) | id;
  };
  switch (out.type) {
    case MsgType::Hello:
      out.hello_recv = static_cast<AccelId>((dw[0] >> 10) & 0x3FF);
      out.hello_sender = static_cast<AccelId>((dw[0] >> 20) & 0x3FF);
      break;
    case MsgType::HelloAck: break;
    case MsgType::NpaReq:
    case MsgType::NpaRelease:
      out.handle.lo = lo_with(self);
      out.handle.hi = (static_cast<std::uint64_t>(dw[3]) << 32) | dw[2];
      break;
    case MsgType::NpaRevoke:
      out.handle.lo = lo_with(sender);
      out.handle.hi = (static_cast<std::uint64_t>(dw[3]) << 32) | dw[2];
      break;
    case MsgType::NpaRsp:
      out.handle.lo = lo_with(sender);
      out.size_pages = dw[2];
      out.npa_page = dw[3];
      break;
    case MsgType::NpaFail:
      out.handle.lo = lo_with(sender);
      out.reason = static_cast<FailReason>(dw[2]);
      break;
  }
  return true;
}

}  // namespace podsim::driver
