// Packets on the fabric: their traffic class and their size in transaction-layer bytes.
#pragma once

#include <string_view>

#include "fabric/framing.hpp"
#include "sim/kernel/access.hpp"

namespace podsim {

// Separate queues and credits per class, so responses never wait for requests (which would
// allow request-response deadlock). Driver messages are requests (posted writes) unless the
// what-if control class carries them (gpu.mailbox.transport), never stuck behind bulk data.
// Lower value = higher priority.
enum class TrafficClass : std::uint8_t { Control = 0, Response = 1, Request = 2 };
constexpr std::size_t kTrafficClasses = 3;
inline std::string_view traffic_class_name(std::size_t tc) {
  constexpr std::string_view names[] = {"control", "response", "request"};
  return names[tc];
}

inline TrafficClass traffic_class(const Access& a) {
  switch (a.kind) {
    case PacketKind::Control: return TrafficClass::Control;
    case PacketKind::Response: return TrafficClass::Response;
    case PacketKind::Request: return TrafficClass::Request;
  }
  return TrafficClass::Request;
}

inline std::uint64_t payload_bytes_on_wire(const Access& a) {
  switch (a.kind) {
    case PacketKind::Request: return a.op != AccessOp::Read ? a.size : 0;    // stores, atomics
    case PacketKind::Response: return a.op != AccessOp::Write ? a.size : 0;  // loads, atomics
    case PacketKind::Control: return a.size;
  }
  return 0;
}

inline std::uint64_t tl_bytes(const Access& a, const PortConfig& p) {
  return tl_bytes(payload_bytes_on_wire(a), p);
}

}  // namespace podsim
