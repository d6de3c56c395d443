#include "sim/kernel/packet_wire.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>

#include "sim/kernel/access.hpp"

namespace podsim {

namespace {

static_assert(sizeof(HopStamp) == 8 && std::is_trivially_copyable_v<HopStamp>);
// Every field of the Access travels (a field left out once, the grant, made a split run's
// NPA MMUs fault every access that checks it). A changed Access must change the format: add
// the field to Head, pack_packet, unpack_packet and tests/sc/test_packet_wire.cpp, bump
// kPacketWireVersion, then this size. A reminder only: a field of a byte or two can fit in
// padding and leave the size as it is.
static_assert(sizeof(Access) == 360 + Access::kMaxHops * sizeof(HopStamp),
              "Access changed: is every field packed?");

// The format, in four parts each copied whole: the head (the version, the Access's scalars in
// declaration order, its hop_count and hops_dropped), the stamps (hop_count of them), the
// data the packet carries (data_bytes), and the tail (the payload's own fields). Packed: no
// padding travels, and a part is one memcpy (per-field appends and checks cost a split run
// more than the copying).
struct [[gnu::packed]] Head {
  unsigned char version;
  std::uint64_t id;
  AccelId src, dst, route_to;
  std::uint8_t kind, op, status, posted, sync, measured, mailbox;
  std::uint32_t size;
  std::uint16_t vmid, data_bytes;
  std::uint64_t vaddr, npa, pa;
  std::uint32_t plane, tag;
  std::int64_t issued;
  std::uint64_t grant;
  std::uint8_t hop_count, hops_dropped;
};
struct [[gnu::packed]] Tail {
  std::int32_t command;
  std::uint64_t address;
  std::uint32_t data_length, streaming_width, byte_enable_length;
  std::int32_t response;
  std::uint8_t dmi;
  std::int32_t option;
};
static_assert(sizeof(Head) == 80 && sizeof(Tail) == 33);
template <class E>
constexpr bool kByteEnum = std::is_same_v<std::underlying_type_t<E>, std::uint8_t>;
static_assert(kByteEnum<PacketKind> && kByteEnum<AccessOp> && kByteEnum<AccessStatus> &&
                  kByteEnum<Measured> && kByteEnum<MailboxWrite>,
              "an Access enum is no longer a byte: widen its field in Head");

template <class E>
auto raw(E e) {
  return static_cast<std::underlying_type_t<E>>(e);
}

[[noreturn, gnu::cold, gnu::noinline]] void fail(const std::string& what) {
  throw std::runtime_error("unpack_packet: " + what);
}

// Reads the parts in order, each checked against the end of the buffer.
class Reader {
 public:
  Reader(const unsigned char* in, const unsigned char* end) : p_(in), end_(end) {}
  template <class T>
  T get(const char* part) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    std::memcpy(static_cast<void*>(&v), take(sizeof(T), part), sizeof(T));
    return v;
  }
  // `n` bytes in place.
  const unsigned char* take(std::size_t n, const char* part) {
    if (static_cast<std::size_t>(end_ - p_) < n) [[unlikely]]
      short_of(n, part);
    const unsigned char* at = p_;
    p_ += n;
    return at;
  }
  const unsigned char* position() const { return p_; }

 private:
  [[noreturn, gnu::cold, gnu::noinline]] void short_of(std::size_t n, const char* part) const {
    fail(std::string("the buffer ends inside ") + part + " (" + std::to_string(n) +
         " bytes wanted, " + std::to_string(end_ - p_) + " left)");
  }
  const unsigned char* p_;
  const unsigned char* end_;
};

// A field stored as S, checked to be one of E's values [lo, hi].
template <class E, class S>
E checked(S v, const char* field, E lo, E hi) {
  if (v < static_cast<S>(lo) || v > static_cast<S>(hi)) [[unlikely]]
    fail(std::string(field) + " " + std::to_string(v) + " is out of range");
  return static_cast<E>(v);
}
bool checked_bool(std::uint8_t v, const char* field) {
  if (v > 1) [[unlikely]]
    fail(std::string(field) + " " + std::to_string(v) + " is not a bool");
  return v != 0;
}

}  // namespace

void pack_packet(const tlm::tlm_generic_payload& gp, ByteBuffer& out) {
  if (typeid(gp) != typeid(Packet))
    throw std::logic_error("pack_packet: the payload is not a podsim Packet");
  const Access& a = static_cast<const Packet&>(gp).access;
  if (gp.get_data_ptr() != a.data.data())
    throw std::logic_error("pack_packet: the payload's data pointer is not its own Access::data");
  if (a.hop_count > Access::kMaxHops)
    throw std::logic_error("pack_packet: the packet's hop_count is above Access::kMaxHops");
  if (a.data_bytes > Access::kMaxData)
    throw std::logic_error("pack_packet: the packet's data_bytes is above Access::kMaxData");
  if (gp.get_byte_enable_ptr())
    throw std::logic_error("pack_packet: the payload has byte enables (podsim packets have none)");

  Head h;
  h.version = kPacketWireVersion;
  h.id = a.id;
  h.src = a.src;
  h.dst = a.dst;
  h.route_to = a.route_to;
  h.kind = raw(a.kind);
  h.op = raw(a.op);
  h.status = raw(a.status);
  h.posted = a.posted;
  h.sync = a.sync;
  h.measured = raw(a.measured);
  h.mailbox = raw(a.mailbox);
  h.size = a.size;
  h.vmid = a.vmid;
  h.data_bytes = a.data_bytes;
  h.vaddr = a.vaddr;
  h.npa = a.npa;
  h.pa = a.pa;
  h.plane = a.plane;
  h.tag = a.tag;
  h.issued = a.issued.as_ps();
  h.grant = a.grant;
  h.hop_count = a.hop_count;
  h.hops_dropped = a.hops_dropped;
  Tail t;
  t.command = static_cast<std::int32_t>(gp.get_command());
  t.address = gp.get_address();
  t.data_length = gp.get_data_length();
  t.streaming_width = gp.get_streaming_width();
  t.byte_enable_length = gp.get_byte_enable_length();
  t.response = static_cast<std::int32_t>(gp.get_response_status());
  t.dmi = gp.is_dmi_allowed();
  t.option = static_cast<std::int32_t>(gp.get_gp_option());

  // The bytes the packet carries (Access::data_bytes), not the whole array: a load's request
  // and a store's response carry none. Bytes beyond stay as the receiving packet has them:
  // only the issuer reads there, and a request that comes back to its issuer's rank comes
  // back into its own packet (sim/pod/partition.cpp), so it reads what it would unsplit.
  const std::size_t hop_bytes = a.hop_count * sizeof(HopStamp);
  const std::size_t at = out.size();
  out.resize(at + sizeof h + hop_bytes + a.data_bytes + sizeof t);
  unsigned char* p = out.data() + at;
  std::memcpy(p, &h, sizeof h);
  p += sizeof h;
  std::memcpy(p, a.hops.data(), hop_bytes);
  p += hop_bytes;
  std::memcpy(p, a.data.data(), a.data_bytes);
  p += a.data_bytes;
  std::memcpy(p, &t, sizeof t);
}

const unsigned char* unpack_packet(const unsigned char* in, const unsigned char* end,
                                   tlm::tlm_generic_payload& gp) {
  if (typeid(gp) != typeid(Packet))
    throw std::logic_error("unpack_packet: the payload is not a podsim Packet");
  // The version first: another version's head may be another size.
  if (in < end && *in != kPacketWireVersion)
    fail("format version " + std::to_string(*in) + ", this podsim reads " +
         std::to_string(kPacketWireVersion));

  // Everything is read and checked before the packet is touched.
  Reader r(in, end);
  const Head h = r.get<Head>("the head");
  const auto kind = checked(h.kind, "kind", PacketKind::Request, PacketKind::Control);
  const auto op = checked(h.op, "op", AccessOp::Read, AccessOp::Atomic);
  const auto status = checked(h.status, "status", AccessStatus::Ok, AccessStatus::Unreachable);
  const bool posted = checked_bool(h.posted, "posted");
  const bool sync = checked_bool(h.sync, "sync");
  const auto measured = checked(h.measured, "measured", Measured::No, Measured::Yes);
  const auto mailbox = checked(h.mailbox, "mailbox", MailboxWrite::None, MailboxWrite::Writeback);
  if (h.data_bytes > Access::kMaxData)
    fail("data_bytes " + std::to_string(h.data_bytes) + " is above " +
         std::to_string(Access::kMaxData));
  if (h.hop_count > Access::kMaxHops)
    fail("hop_count " + std::to_string(h.hop_count) + " is above " +
         std::to_string(Access::kMaxHops));
  const unsigned char* hops = r.take(h.hop_count * sizeof(HopStamp), "the hops");
  for (std::size_t i = 0; i < h.hop_count; ++i) {
    HopStamp s;
    std::memcpy(&s, hops + i * sizeof(HopStamp), sizeof s);
    if (s.kind() >= HopKind::Count) [[unlikely]]
      fail("hop " + std::to_string(i) + " has no hop kind");
  }
  const unsigned char* data = r.take(h.data_bytes, "the data");
  const Tail t = r.get<Tail>("the payload's fields");
  const auto command =
      checked(t.command, "the command", tlm::TLM_READ_COMMAND, tlm::TLM_IGNORE_COMMAND);
  const auto response = checked(t.response, "the response status",
                                tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE, tlm::TLM_OK_RESPONSE);
  const bool dmi = checked_bool(t.dmi, "the DMI flag");
  const auto option =
      checked(t.option, "the gp option", tlm::TLM_MIN_PAYLOAD, tlm::TLM_FULL_PAYLOAD_ACCEPTED);

  // Straight into the packet's own Access (it stays the packet's). Stamps past hop_count are
  // not the packet's (a pooled packet keeps old ones there, split or not).
  Access& a = static_cast<Packet&>(gp).access;
  a.id = h.id;
  a.src = h.src;
  a.dst = h.dst;
  a.route_to = h.route_to;
  a.kind = kind;
  a.op = op;
  a.status = status;
  a.posted = posted;
  a.sync = sync;
  a.measured = measured;
  a.mailbox = mailbox;
  a.size = h.size;
  a.vmid = h.vmid;
  a.data_bytes = h.data_bytes;
  a.vaddr = h.vaddr;
  a.npa = h.npa;
  a.pa = h.pa;
  a.plane = h.plane;
  a.tag = h.tag;
  a.issued = Time::ps(h.issued);
  a.grant = h.grant;
  a.hops_dropped = h.hops_dropped;
  a.hop_count = h.hop_count;
  std::memcpy(a.hops.data(), hops, h.hop_count * sizeof(HopStamp));
  std::memcpy(a.data.data(), data, h.data_bytes);
  gp.set_command(command);
  gp.set_address(t.address);
  gp.set_data_ptr(a.data.data());
  gp.set_data_length(t.data_length);
  gp.set_streaming_width(t.streaming_width);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_byte_enable_length(t.byte_enable_length);
  gp.set_response_status(response);
  gp.set_dmi_allowed(dmi);
  gp.set_gp_option(option);
  return r.position();
}

}  // namespace podsim
