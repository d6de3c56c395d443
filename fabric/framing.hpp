// What a packet costs on the wire: its header plus the data it carries. Loads send a bare
// request and get data back; stores carry data forward and get a bare acknowledgement.
#pragma once

#include "fabric/fabric_config.hpp"
#include "sim/kernel/access.hpp"

namespace podsim {

inline std::uint64_t payload_bytes_on_wire(const Access& a) {
  switch (a.kind) {
    case PacketKind::Request: return a.op == AccessOp::Write ? a.size : 0;
    case PacketKind::Response: return a.op == AccessOp::Read ? a.size : 0;
    case PacketKind::Control: return a.size;
  }
  return 0;
}

inline Bytes wire_bytes(const Access& a, const PortConfig& p) {
  return Bytes(p.header_bytes.count() + payload_bytes_on_wire(a));
}

}  // namespace podsim
