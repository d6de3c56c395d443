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
// the field to pack_packet, unpack_packet and tests/sc/test_packet_wire.cpp, bump
// kPacketWireVersion, then this size. A reminder only: a field of a byte or two can fit in
// padding and leave the size as it is.
static_assert(sizeof(Access) == 680, "Access changed: is every field packed?");

// Appends fixed-width fields to a buffer grown once for the whole packet (no per-field
// growth checks on the hot path of a split run).
class Writer {
 public:
  Writer(ByteBuffer& out, std::size_t bytes) : out_(out), at_(out.size()) {
    out.resize(at_ + bytes);
  }
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    bytes(&v, sizeof(T));
  }
  void bytes(const void* p, std::size_t n) {
    if (out_.size() - at_ < n) [[unlikely]]
      wrong_size();
    std::memcpy(out_.data() + at_, p, n);
    at_ += n;
  }
  std::size_t at() const { return at_; }
  // The fields did not fill the size given: kAccessBytes or kPayloadBytes are wrong.
  [[noreturn, gnu::cold, gnu::noinline]] static void wrong_size() {
    throw std::logic_error("pack_packet: the fields and the format's sizes disagree");
  }

 private:
  ByteBuffer& out_;
  std::size_t at_;
};

// Reads fields in order, each checked against the end of the buffer.
class Reader {
 public:
  Reader(const unsigned char* in, const unsigned char* end) : p_(in), end_(end) {}
  template <class T>
  T get(const char* field) {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    bytes(&v, sizeof(T), field);
    return v;
  }
  void bytes(void* to, std::size_t n, const char* field) {
    if (static_cast<std::size_t>(end_ - p_) < n) [[unlikely]]
      short_of(n, field);
    std::memcpy(to, p_, n);
    p_ += n;
  }
  // `n` bytes in place (checked like bytes()).
  const unsigned char* take(std::size_t n, const char* field) {
    if (static_cast<std::size_t>(end_ - p_) < n) [[unlikely]]
      short_of(n, field);
    const unsigned char* at = p_;
    p_ += n;
    return at;
  }
  // An enum stored as an S, checked to be one of its values [lo, hi].
  template <class E, class S = std::underlying_type_t<E>>
  E get_enum(const char* field, E lo, E hi) {
    const S v = get<S>(field);
    if (v < static_cast<S>(lo) || v > static_cast<S>(hi))
      fail(std::string(field) + " " + std::to_string(v) + " is out of range");
    return static_cast<E>(v);
  }
  bool get_bool(const char* field) {
    const auto v = get<std::uint8_t>(field);
    if (v > 1) fail(std::string(field) + " " + std::to_string(v) + " is not a bool");
    return v != 0;
  }
  const unsigned char* position() const { return p_; }
  [[noreturn, gnu::cold, gnu::noinline]] static void fail(const std::string& what) {
    throw std::runtime_error("unpack_packet: " + what);
  }
  [[noreturn, gnu::cold, gnu::noinline]] void short_of(std::size_t n, const char* field) const {
    fail(std::string("the buffer ends inside ") + field + " (" + std::to_string(n) +
         " bytes wanted, " + std::to_string(end_ - p_) + " left)");
  }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
};

template <class E>
auto raw(E e) {
  return static_cast<std::underlying_type_t<E>>(e);
}

}  // namespace

// The fixed fields' bytes: the version, the Access's scalars, hop_count and hops_dropped,
// then (after the stamps and the data) the payload's own fields.
constexpr std::size_t kAccessBytes =
    1 + 8 + 3 * sizeof(AccelId) + 7 + 4 + 2 + 2 + 3 * 8 + 4 + 4 + 8 + 8 + 2;
constexpr std::size_t kPayloadBytes = 4 + 8 + 4 + 4 + 4 + 4 + 1 + 4;

void pack_packet(const tlm::tlm_generic_payload& gp, ByteBuffer& out) {
  if (typeid(gp) != typeid(Packet))
    throw std::logic_error("pack_packet: the payload is not a podsim Packet");
  const Access& a = static_cast<const Packet&>(gp).access;
  if (gp.get_data_ptr() != a.data.data())
    throw std::logic_error("pack_packet: the payload's data pointer is not its own Access::data");
  if (a.hop_count > Access::kMaxHops)
    throw std::logic_error("pack_packet: the packet's hop_count is above Access::kMaxHops");
  if (gp.get_byte_enable_ptr())
    throw std::logic_error("pack_packet: the payload has byte enables (podsim packets have none)");

  if (a.data_bytes > Access::kMaxData)
    throw std::logic_error("pack_packet: the packet's data_bytes is above Access::kMaxData");

  const std::size_t hop_bytes = a.hop_count * sizeof(HopStamp);
  Writer w(out, kAccessBytes + hop_bytes + a.data_bytes + kPayloadBytes);
  w.put(kPacketWireVersion);
  // The Access, in declaration order.
  w.put(a.id);
  w.put(a.src);
  w.put(a.dst);
  w.put(a.route_to);
  w.put(raw(a.kind));
  w.put(raw(a.op));
  w.put(raw(a.status));
  w.put(static_cast<std::uint8_t>(a.posted));
  w.put(static_cast<std::uint8_t>(a.sync));
  w.put(raw(a.measured));
  w.put(raw(a.mailbox));
  w.put(a.size);
  w.put(a.vmid);
  w.put(a.data_bytes);
  w.put(a.vaddr);
  w.put(a.npa);
  w.put(a.pa);
  w.put(a.plane);
  w.put(a.tag);
  w.put(a.issued.as_ps());
  w.put(a.grant);
  w.put(a.hop_count);
  w.put(a.hops_dropped);
  w.bytes(a.hops.data(), hop_bytes);
  // The bytes the packet carries (Access::data_bytes), not the whole array: a load's request
  // and a store's response carry none. Bytes beyond stay as the receiving packet has them:
  // only the issuer reads there, and a request that comes back to its issuer's rank comes
  // back into its own packet (sim/pod/partition.cpp), so it reads what it would unsplit.
  w.bytes(a.data.data(), a.data_bytes);
  // The payload's own fields.
  w.put(static_cast<std::int32_t>(gp.get_command()));
  w.put(static_cast<std::uint64_t>(gp.get_address()));
  w.put(static_cast<std::uint32_t>(gp.get_data_length()));
  w.put(static_cast<std::uint32_t>(gp.get_streaming_width()));
  w.put(static_cast<std::uint32_t>(gp.get_byte_enable_length()));
  w.put(static_cast<std::int32_t>(gp.get_response_status()));
  w.put(static_cast<std::uint8_t>(gp.is_dmi_allowed()));
  w.put(static_cast<std::int32_t>(gp.get_gp_option()));
  if (w.at() != out.size()) w.wrong_size();
}

const unsigned char* unpack_packet(const unsigned char* in, const unsigned char* end,
                                   tlm::tlm_generic_payload& gp) {
  if (typeid(gp) != typeid(Packet))
    throw std::logic_error("unpack_packet: the payload is not a podsim Packet");
  Reader r(in, end);
  const auto version = r.get<unsigned char>("the version");
  if (version != kPacketWireVersion)
    Reader::fail("format version " + std::to_string(version) + ", this podsim reads " +
                 std::to_string(kPacketWireVersion));

  // Everything is read and checked before the packet is touched.
  const auto id = r.get<std::uint64_t>("id");
  const auto src = r.get<AccelId>("src");
  const auto dst = r.get<AccelId>("dst");
  const auto route_to = r.get<AccelId>("route_to");
  const auto kind = r.get_enum("kind", PacketKind::Request, PacketKind::Control);
  const auto op = r.get_enum("op", AccessOp::Read, AccessOp::Atomic);
  const auto status = r.get_enum("status", AccessStatus::Ok, AccessStatus::Unreachable);
  const bool posted = r.get_bool("posted");
  const bool sync = r.get_bool("sync");
  const auto measured = r.get_enum("measured", Measured::No, Measured::Yes);
  const auto mailbox = r.get_enum("mailbox", MailboxWrite::None, MailboxWrite::Writeback);
  const auto size = r.get<std::uint32_t>("size");
  const auto vmid = r.get<std::uint16_t>("vmid");
  const auto data_bytes = r.get<std::uint16_t>("data_bytes");
  if (data_bytes > Access::kMaxData)
    Reader::fail("data_bytes " + std::to_string(data_bytes) + " is above " +
                 std::to_string(Access::kMaxData));
  const auto vaddr = r.get<std::uint64_t>("vaddr");
  const auto npa = r.get<std::uint64_t>("npa");
  const auto pa = r.get<std::uint64_t>("pa");
  const auto plane = r.get<std::uint32_t>("plane");
  const auto tag = r.get<std::uint32_t>("tag");
  const auto issued = r.get<std::int64_t>("issued");
  const auto grant = r.get<std::uint64_t>("grant");
  const auto hop_count = r.get<std::uint8_t>("hop_count");
  if (hop_count > Access::kMaxHops)
    Reader::fail("hop_count " + std::to_string(hop_count) + " is above " +
                 std::to_string(Access::kMaxHops));
  const auto hops_dropped = r.get<std::uint8_t>("hops_dropped");
  const unsigned char* hops = r.take(hop_count * sizeof(HopStamp), "the hops");
  for (std::size_t i = 0; i < hop_count; ++i) {
    HopStamp h;
    std::memcpy(&h, hops + i * sizeof(HopStamp), sizeof h);
    if (h.kind() >= HopKind::Count) Reader::fail("hop " + std::to_string(i) + " has no hop kind");
  }
  const unsigned char* data = r.take(data_bytes, "the data");
  const auto command = r.get_enum<tlm::tlm_command, std::int32_t>(
      "the command", tlm::TLM_READ_COMMAND, tlm::TLM_IGNORE_COMMAND);
  const auto address = r.get<std::uint64_t>("the address");
  const auto data_length = r.get<std::uint32_t>("the data length");
  const auto streaming_width = r.get<std::uint32_t>("the streaming width");
  const auto byte_enable_length = r.get<std::uint32_t>("the byte-enable length");
  const auto response = r.get_enum<tlm::tlm_response_status, std::int32_t>(
      "the response status", tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE, tlm::TLM_OK_RESPONSE);
  const bool dmi = r.get_bool("the DMI flag");
  const auto option = r.get_enum<tlm::tlm_gp_option, std::int32_t>(
      "the gp option", tlm::TLM_MIN_PAYLOAD, tlm::TLM_FULL_PAYLOAD_ACCEPTED);

  // Straight into the packet's own Access (it stays the packet's). Stamps past hop_count are
  // not the packet's (a pooled packet keeps old ones there, split or not).
  Access& a = static_cast<Packet&>(gp).access;
  a.id = id;
  a.src = src;
  a.dst = dst;
  a.route_to = route_to;
  a.kind = kind;
  a.op = op;
  a.status = status;
  a.posted = posted;
  a.sync = sync;
  a.measured = measured;
  a.mailbox = mailbox;
  a.size = size;
  a.vmid = vmid;
  a.data_bytes = data_bytes;
  a.vaddr = vaddr;
  a.npa = npa;
  a.pa = pa;
  a.plane = plane;
  a.tag = tag;
  a.issued = Time::ps(issued);
  a.grant = grant;
  a.hops_dropped = hops_dropped;
  a.hop_count = hop_count;
  std::memcpy(a.hops.data(), hops, hop_count * sizeof(HopStamp));
  std::memcpy(a.data.data(), data, data_bytes);
  gp.set_command(command);
  gp.set_address(address);
  gp.set_data_ptr(a.data.data());
  gp.set_data_length(data_length);
  gp.set_streaming_width(streaming_width);
  gp.set_byte_enable_ptr(nullptr);
  gp.set_byte_enable_length(byte_enable_length);
  gp.set_response_status(response);
  gp.set_dmi_allowed(dmi);
  gp.set_gp_option(option);
  return r.position();
}

}  // namespace podsim
