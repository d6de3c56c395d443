// The driver-to-driver protocol messages, encoded exactly as the amdgpu UALink code does
// (docs/reference/amdgpu-ualink-protocol.md §3): four dwords, the type in dw0 bits 9:0,
// where the exporter-ID bits of handle_lo would be.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "sim/core/ids.hpp"

namespace podsim::driver {

struct UalinkHandle {
  std::uint64_t lo = 0;  // bits 9:0 = exporter's accelerator ID
  std::uint64_t hi = 0;
  AccelId exporter() const { return static_cast<AccelId>(lo & 0x3FF); }
  bool operator==(const UalinkHandle&) const = default;
};

enum class MsgType : std::uint8_t {
  Hello = 1,
  HelloAck = 2,
  NpaReq = 3,
  NpaRsp = 4,
  NpaFail = 5,
  NpaRevoke = 6,
  NpaRelease = 7,
};
constexpr std::size_t kMsgTypes = 8;
std::string_view msg_name(MsgType t);

enum class FailReason : std::uint32_t { NoSpace = 1, InvalidHandle = 2, Duplicate = 3, Error = 4 };

// A decoded message. Which fields mean something depends on the type.
struct Message {
  MsgType type = MsgType::Hello;
  UalinkHandle handle;           // REQ, REVOKE, RELEASE: lo and hi; RSP, FAIL: lo only
  std::uint32_t size_pages = 0;  // RSP
  std::uint32_t npa_page = 0;    // RSP: NPA page number, exporter ID stripped
  FailReason reason{};           // FAIL
  AccelId hello_recv = 0;        // HELLO
  AccelId hello_sender = 0;      // HELLO
};

using Dwords = std::array<std::uint32_t, 4>;

Dwords encode(const Message& m);
// `sender` is the source the firmware reports; `self` the receiver's own ID. The receiver
// puts back handle_lo's ID bits: its own for REQ and RELEASE, the sender's otherwise.
// Returns false for an unknown type.
bool decode(const Dwords& dw, AccelId sender, AccelId self, Message& out);

}  // namespace podsim::driver
