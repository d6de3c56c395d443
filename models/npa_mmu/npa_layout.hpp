// NPA (Network Physical Address) layout shared by the hardware models and the driver model
// (plain C++, no SystemC). Byte address: bits 50:41 = GPU ID, bits 40:0 = offset in that
// GPU's 2 TiB window. In pages: GPU ID at bits 38:29, window page at bits 28:0.
#pragma once

#include <algorithm>
#include <cstdint>

#include "sim/core/ids.hpp"

namespace podsim {

constexpr unsigned kNpaIdShift = 41;         // in a byte address
constexpr unsigned kNpaWindowPageBits = 29;  // in a page number
constexpr std::uint64_t kNpaWindowPageMask = (1ull << kNpaWindowPageBits) - 1;

inline AccelId npa_accel(std::uint64_t npa_byte_address) {
  return static_cast<AccelId>((npa_byte_address >> kNpaIdShift) & (kMaxAccels - 1));
}

// How the exporter reads bits 50:41 of an incoming NPA (the vPod's addr_mode).
enum class NpaAddrMode : std::uint8_t {
  SourceAliasing = 0,        // aliased away: one NPA range serves every importer
  SourceIdentification = 1,  // the requester's ID: each importer has its own window
};

}  // namespace podsim

namespace podsim {

// -- The rings' pages (protocol reference §2 and §8). Every GPU keeps, in its own NPA VM,
// receive pages for each peer that may send to it: a TLB-shootdown ring (type 0), an
// interrupt ring (type 1), and the page holding write pointers and write-backs (type 2).
// Senders write them with the receiver's ID in bits 50:41.
//   source-identification: receive page `type` for sender S at S<<29 | type (in S's window,
//     as the receiver sees bits 50:41); the type-2 page is S's own: S's write pointers to us,
//     and our firmware's write-backs to S, at 8-byte entries (below).
//   source-aliasing: receive pages at 2 MiB + (S << 13 | type << 12), pages 512 + 2S + type
//     for types 0 and 1; the write-pointer and write-back entries of every peer P live in the
//     two pages of the receiver's own ID (2 MiB + self << 13), 8 bytes per peer at P * 8.
// An entry: the write pointers of the interrupt and TLB rings (2 bytes each), then the
// write-backs for them (2 bytes each).
// The doorbell is not memory: a posted write to 0xFFF << 40 | dst << 30 | port << 8 |
// ring-select << 6, which the receiver's firmware takes.
constexpr std::uint64_t kRingFirstPage = 512;  // 2 MiB: below it no ring in either mode
enum class RingPage : unsigned { TlbRing = 0, IntRing = 1, Pointers = 2 };

// The first page NPA ranges are allocated from in source-aliasing mode: 0x800 (8 MiB) as in
// the driver, or above the receive pages of `accel_max` senders if they reach further (a
// 1,024-GPU pod: 10 MiB).
inline std::uint64_t alias_first_range_page(std::uint32_t accel_max) {
  const std::uint64_t end = kRingFirstPage + 2ull * accel_max;
  return std::max<std::uint64_t>(0x800, (end + 511) / 512 * 512);
}

// How many receive pages a GPU maps for `accels` accelerators that may send to it (itself
// included: the pod's GPUs), and the VRAM they take: whole 2 MiB blocks (the rings' NPA area
// is one), so that first-fit buffers allocated after them stay 2 MiB-aligned.
inline std::uint64_t ring_receive_pages(NpaAddrMode mode, std::uint64_t accels) {
  return mode == NpaAddrMode::SourceIdentification ? 3 * (accels - 1) : 2 * accels;
}
inline std::uint64_t ring_vram_pages(NpaAddrMode mode, std::uint64_t accels) {
  return (ring_receive_pages(mode, accels) + 511) / 512 * 512;
}

// The NPA VM page (as NpaMmu::key_of gives it) of `sender`'s receive page `page` at a receiver
// that is `self`.
inline std::uint64_t ring_page_key(NpaAddrMode mode, AccelId self, AccelId sender, RingPage page) {
  const auto type = static_cast<std::uint64_t>(page);
  if (mode == NpaAddrMode::SourceIdentification)
    return static_cast<std::uint64_t>(sender) << kNpaWindowPageBits | type;
  if (page == RingPage::Pointers) return kRingFirstPage + 2ull * self;
  return kRingFirstPage + 2ull * sender + type;
}

// The NPA byte addresses the control path writes. ring_index: 0 interrupts, 1 TLB (the
// mailbox's numbering). Slot `slot` of `sender`'s ring at `receiver`:
inline std::uint64_t ring_slot_npa(NpaAddrMode mode, AccelId receiver, AccelId sender,
                                   unsigned ring_index, std::uint32_t slot) {
  const RingPage page = ring_index == 0 ? RingPage::IntRing : RingPage::TlbRing;
  const std::uint64_t key = ring_page_key(mode, receiver, sender, page);
  return static_cast<std::uint64_t>(receiver) << kNpaIdShift | (key & kNpaWindowPageMask) << 12 |
         static_cast<std::uint64_t>(slot) * 64;
}
// The write pointer (writeback = false) `peer` keeps at `owner` for its ring `ring_index` to
// `owner`, or the write-back `peer`'s firmware keeps at `owner` for owner's ring to it.
inline std::uint64_t pointer_npa(NpaAddrMode mode, AccelId owner, AccelId peer, unsigned ring_index,
                                 bool writeback) {
  const std::uint64_t key = ring_page_key(mode, owner, peer, RingPage::Pointers);
  const std::uint64_t entry =
      mode == NpaAddrMode::SourceIdentification ? 0 : static_cast<std::uint64_t>(peer) * 8;
  return static_cast<std::uint64_t>(owner) << kNpaIdShift | (key & kNpaWindowPageMask) << 12 |
         entry | (writeback ? 4 : 0) | ring_index * 2;
}
inline std::uint64_t doorbell_npa(AccelId receiver, std::uint32_t port, unsigned ring_index) {
  return 0xFFFull << 40 | static_cast<std::uint64_t>(receiver) << 30 |
         static_cast<std::uint64_t>(port) << 8 | (ring_index == 1 ? 1ull : 0) << 6;
}

}  // namespace podsim
