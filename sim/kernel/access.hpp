// The shared transaction type: a TLM-2.0 generic payload carrying an `Access` extension.
// One pooled payload carries one remote access for its whole round trip (the request packet
// and its response), or one control message; every hop stamps it, so each completed access
// knows where its time went.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <string_view>
#include <tlm>
#include <vector>

#include "sim/core/ids.hpp"
#include "sim/core/units.hpp"

namespace podsim {

enum class AccessOp : std::uint8_t { Read, Write, Atomic };  // atomic: fetch-and-add

// Whether an access is in its requester's measured window (workload.traffic.warmup): issued
// after the warm-up (Yes), or a warm-up access or a control message (No).
enum class Measured : std::uint8_t { No, Yes };
enum class PacketKind : std::uint8_t { Request, Response, Control };
// The firmware mailbox's writes (models/mailbox; none for data). A ring slot, write pointer or
// write-back is a posted write into the receiver's memory, which tells its GPU's firmware when
// the write has landed; a doorbell is a posted write to the receiver's firmware itself.
enum class MailboxWrite : std::uint8_t { None, RingSlot, WritePointer, Doorbell, Writeback };
enum class AccessStatus : std::uint8_t {
  Ok,
  Fault,        // the importer's GPUVM had no valid mapping: never sent, never served
  RemoteFault,  // the exporter's NPA MMU had no valid mapping: not served
  Retry,        // the exporter's PTE said "retry" (revoke in progress, page moving): not served
  Unreachable,  // the destination GPU was down (reset, offline): not served
};

// Where a stamp was taken. A stamp marks the moment a packet enters that component.
enum class HopKind : std::uint8_t {
  Issue,      // the compute agent issued the access
  GpuVm,      // address translation at the requester
  PortTx,     // transmit side of a UALink port (queueing, serialization start, pipeline)
  Link,       // on the wire
  Switch,     // inside a UALoE switch (latency, output queueing)
  PortRx,     // receive side of a UALink port (rest of serialization, pipeline)
  NpaMmu,     // NPA translation at the exporter
  Vram,       // memory (channel queueing, transfer, access)
  RetryWait,  // answered with a retry: waiting to re-issue
  Complete,   // the response reached the compute agent
  Count
};
std::string_view hop_name(HopKind k);

// A stamp in 8 bytes: the time in ps (56 bits: 20 hours), the hop, and the direction.
class HopStamp {
 public:
  HopStamp() = default;
  HopStamp(Time at, HopKind k, bool response)
      : bits_(static_cast<std::uint64_t>(at.as_ps()) | static_cast<std::uint64_t>(k) << 56 |
              static_cast<std::uint64_t>(response) << 63) {}
  Time at() const { return Time::ps(static_cast<std::int64_t>(bits_ & ((1ull << 56) - 1))); }
  HopKind kind() const { return static_cast<HopKind>((bits_ >> 56) & 0x7F); }
  bool response() const { return bits_ >> 63; }
  // The hop and the direction in one byte (the hop in its low 7 bits): an index for tables.
  std::uint8_t code() const { return static_cast<std::uint8_t>(bits_ >> 56); }

 private:
  std::uint64_t bits_ = 0;
};

// The extension podsim's packets carry. It lives inside its Packet (below), so podsim reaches
// it without an extension lookup; it is also registered as the payload's extension, so
// generic TLM code can find it the standard way.
class Access final : public tlm::tlm_extension<Access> {
 public:
  // The trail's capacity: one round trip's stamps on the longest path a topology makes
  // (fabric/topology.cpp checks it at compile time), and no more: every in-flight access holds
  // a packet, and at 1,024 GPUs under load half a million are in flight.
  static constexpr std::size_t kMaxHops = 24;
  static constexpr std::size_t kMaxData = 256;

  // -- identity and addressing
  std::uint64_t id = 0;
  AccelId src = 0;       // requester (importer) or message sender
  AccelId dst = 0;       // exporter or message receiver
  AccelId route_to = 0;  // where the fabric delivers this packet now
  PacketKind kind = PacketKind::Request;
  AccessOp op = AccessOp::Read;
  AccessStatus status = AccessStatus::Ok;
  bool posted = false;  // a store with no response
  // A flag of a collective (models/compute/collective): VRAM keeps its data even with
  // gpu.vram.functional_data off, since the synchronisation reads it.
  bool sync = false;
  // Issued inside its requester's measured window (after the warm-up): its packets count in
  // the windowed utilisations (workload.traffic.warmup).
  Measured measured = Measured::No;
  MailboxWrite mailbox = MailboxWrite::None;
  std::uint32_t size = 0;  // payload bytes (64..256 for data, 64 for control commands)
  std::uint16_t vmid = 0;
  // How many bytes of `data`, from its start, hold what this packet carries: the store's (or
  // atomic's) operand or a control message on the way out, what memory returned on the way
  // back (0: none, e.g. a load's request, a store's response). Every writer of `data` sets it
  // to cover what it wrote; what crosses between ranks of a split run is these bytes alone
  // (sim/kernel/packet_wire), so nothing may read beyond them but the packet's own issuer.
  std::uint16_t data_bytes = 0;
  std::uint64_t vaddr = 0;  // the importer's GPU virtual address
  std::uint64_t npa = 0;    // network physical address (driver- and hardware-internal only)
  std::uint64_t pa = 0;     // local VRAM byte address once translated
  std::uint32_t plane = 0;  // fabric plane / port index chosen by the requester
  std::uint32_t tag = 0;    // requester-private slot (the agent's outstanding entry)
  Time issued;
  // The export (handle lo) the requester's GPUVM mapping was made for: what an NPA MMU that
  // checks grant tags compares with its PTE's (gpu.npa_mmu.check_grant_tags).
  std::uint64_t grant = 0;

  // -- the per-hop timestamp trail
  void stamp(HopKind k, Time at) {
    if (hop_count < kMaxHops)
      hops[hop_count++] = HopStamp{at, k, kind == PacketKind::Response};
    else
      ++hops_dropped;
  }
  std::uint8_t hop_count = 0;
  std::uint8_t hops_dropped = 0;
  std::array<HopStamp, kMaxHops> hops{};

  // -- inline data (reads fill it, writes carry it, control commands live in it)
  std::array<unsigned char, kMaxData> data{};

  // Clears per-use state; the pool calls it when a payload is handed out.
  void reset_for_use();

  tlm::tlm_extension_base* clone() const override;
  void copy_from(const tlm::tlm_extension_base& other) override;
  // Inside its Packet, it is the Packet's; a clone (for someone else's payload) is deleted
  // with that payload.
  void free() override {
    if (heap_copy_) delete this;
  }

 private:
  bool heap_copy_ = false;
};

// A payload and its Access in one allocation: what PacketPool hands out. Every payload in
// podsim is one of these. Aligned to a cache line, so that what its hops read and write lies
// in the same few lines of every packet.
struct alignas(64) Packet final : tlm::tlm_generic_payload {
  explicit Packet(tlm::tlm_mm_interface* mm) : tlm::tlm_generic_payload(mm) {
    set_extension(&access);
  }
  // The payload's destructor frees its extensions: this one is gone by then (members go
  // first), so it is taken off the payload before.
  ~Packet() { clear_extension(&access); }
  Packet(const Packet&) = delete;
  Packet& operator=(const Packet&) = delete;
  Access access;
};

// Every payload in podsim is a Packet (debug builds check: a foreign payload would be read
// as one).
inline Access& access_of(tlm::tlm_generic_payload& gp) {
  assert(gp.get_extension<Access>() == &static_cast<Packet&>(gp).access);
  return static_cast<Packet&>(gp).access;
}
// The order key for TimedQueue ties: packets due at the same time are served by access ID.
inline std::uint64_t order_key(tlm::tlm_generic_payload& gp) {
  return access_of(gp).id;
}

// Starts loading the lines of a packet that the hops read and write: the payload, the Access's
// identity and addressing, and the hop stamps of a round trip through a switch or two (a hint
// for the dispatcher's fetching ahead; changes nothing).
inline void prefetch_packet(const tlm::tlm_generic_payload* gp) {
  constexpr std::size_t kHotBytes = sizeof(tlm::tlm_generic_payload) + 96 + 16 * sizeof(HopStamp);
  const char* p = reinterpret_cast<const char*>(gp);
  for (std::size_t at = 0; at < kHotBytes; at += 64)
    __builtin_prefetch(p + at, 1);
}
// The same, as a queue of packets fetches its items ahead (TimedQueue::fetch_ahead).
inline void prefetch_packet_item(tlm::tlm_generic_payload* const& gp) {
  prefetch_packet(gp);
}

// A pool of payloads with their Access extensions: the hot path never allocates once the
// pool has grown to the number of packets in flight.
class PacketPool final : public tlm::tlm_mm_interface {
 public:
  explicit PacketPool(std::size_t reserve = 0);
  ~PacketPool() override;
  PacketPool(const PacketPool&) = delete;
  PacketPool& operator=(const PacketPool&) = delete;

  // A fresh payload with reference count 1 (release it with gp.release()).
  tlm::tlm_generic_payload& acquire();
  void free(tlm::tlm_generic_payload* gp) override;

  std::size_t in_use() const { return in_use_; }
  // The most payloads ever in use at once (every access in flight holds one).
  std::size_t peak_in_use() const { return peak_; }
  std::size_t allocated() const { return all_.size(); }

 private:
  void grow();
  std::vector<Packet*> all_;
  std::vector<Packet*> free_;
  std::size_t in_use_ = 0;
  std::size_t peak_ = 0;
};

// Payload bytes of posted stores lost at one place (nobody waits for a posted store's answer),
// all and those in the measured window: what the pod's bandwidths leave out.
struct LostBytes {
  std::uint64_t all = 0, measured = 0;
  void add(const Access& a) {
    all += a.size;
    if (a.measured != Measured::No) measured += a.size;
  }
  LostBytes& operator+=(const LostBytes& o) {
    all += o.all;
    measured += o.measured;
    return *this;
  }
};

}  // namespace podsim
