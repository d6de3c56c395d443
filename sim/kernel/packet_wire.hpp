// A packet as bytes, and back: how a packet crosses from one MPI rank's part of the pod to
// another's. Everything the receiving side could read travels: every field of the Access
// (its hop trail up to hop_count, and of its data the bytes it carries: Access::data_bytes)
// and the payload's own fields that
// podsim sets or reads (command, address, data length, streaming width, byte-enable length,
// response status, DMI flag, gp option). The data pointer does not travel: on a podsim packet
// it always points at the packet's own Access::data, and it is restored to point there.
//
// The format is memcpy'd fixed-width fields after a version byte: every rank of a run is the
// same podsim binary on the same machine architecture (endianness, enum sizes), so no field is
// converted. Nothing else a payload may carry (other extensions, a byte-enable array) travels;
// podsim packets carry neither.
#pragma once

#include <tlm>
#include <vector>

#include "sim/core/byte_io.hpp"

namespace podsim {

// The format's version, the first byte of every packed packet.
inline constexpr unsigned char kPacketWireVersion = 6;

// Appends the packet's bytes to `out`. Throws std::logic_error for a payload that is not a
// podsim Packet, or one whose data pointer is not its own Access::data or that has byte
// enables (neither could be rebuilt on the other side).
void pack_packet(const tlm::tlm_generic_payload& gp, ByteBuffer& out);

// Fills `gp`, a packet just acquired from a PacketPool, with the packet packed at `in`;
// returns the position after it. The packet's reference count, memory manager and extension
// registration are left as they are; its data pointer is set to its own Access::data. Throws
// std::runtime_error, leaving `gp` as it was, if the bytes are short or malformed (another
// version, a hop count above Access::kMaxHops, a value no field can hold), and
// std::logic_error if `gp` is not a podsim Packet.
const unsigned char* unpack_packet(const unsigned char* in, const unsigned char* end,
                                   tlm::tlm_generic_payload& gp);

}  // namespace podsim
