#include "sim/kernel/packet_wire.hpp"

#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "sim/kernel/access.hpp"

namespace podsim {

namespace {

static_assert(sizeof(HopStamp) == 8 && std::is_trivially_copyable_v<HopStamp>);

template <class T>
void put(std::vector<unsigned char>& out, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  const auto* b = reinterpret_cast<const unsigned char*>(&v);
  out.insert(out.end(), b, b + sizeof(T));
}

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
    if (static_cast<std::size_t>(end_ - p_) < n)
      fail(std::string("the buffer ends inside ") + field + " (" + std::to_string(n) +
           " bytes wanted, " + std::to_string(end_ - p_) + " left)");
    std::memcpy(to, p_, n);
    p_ += n;
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
  [[noreturn]] static void fail(const std::string& what) {
    throw std::runtime_error("unpack_packet: " + what);
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

void pack_packet(const tlm::tlm_generic_payload& gp, std::vector<unsigned char>& out) {
  const auto* p = dynamic_cast<const Packet*>(&gp);
  if (!p) throw std::logic_error("pack_packet: the payload is not a podsim Packet");
  const Access& a = p->access;
  if (gp.get_data_ptr() != a.data.data())
    throw std::logic_error("pack_packet: the payload's data pointer is not its own Access::data");
  if (a.hop_count > Access::kMaxHops)
    throw std::logic_error("pack_packet: the packet's hop_count is above Access::kMaxHops");
  if (gp.get_byte_enable_ptr())
    throw std::logic_error("pack_packet: the payload has byte enables (podsim packets have none)");

  put(out, kPacketWireVersion);
  // The Access, in declaration order.
  put(out, a.id);
  put(out, a.src);
  put(out, a.dst);
  put(out, a.route_to);
  put(out, raw(a.kind));
  put(out, raw(a.op));
  put(out, raw(a.status));
  put(out, static_cast<std::uint8_t>(a.posted));
  put(out, static_cast<std::uint8_t>(a.sync));
  put(out, raw(a.measured));
  put(out, raw(a.mailbox));
  put(out, a.size);
  put(out, a.vmid);
  put(out, a.vaddr);
  put(out, a.npa);
  put(out, a.pa);
  put(out, a.plane);
  put(out, a.tag);
  put(out, a.issued.as_ps());
  put(out, a.hop_count);
  put(out, a.hops_dropped);
  const auto* hops = reinterpret_cast<const unsigned char*>(a.hops.data());
  out.insert(out.end(), hops, hops + a.hop_count * sizeof(HopStamp));
  // All of it, whatever `size` says: what a model left beyond it travels too, so a run split
  // across ranks computes on the same bytes as one that is not.
  out.insert(out.end(), a.data.begin(), a.data.end());
  // The payload's own fields.
  put(out, static_cast<std::int32_t>(gp.get_command()));
  put(out, static_cast<std::uint64_t>(gp.get_address()));
  put(out, static_cast<std::uint32_t>(gp.get_data_length()));
  put(out, static_cast<std::uint32_t>(gp.get_streaming_width()));
  put(out, static_cast<std::uint32_t>(gp.get_byte_enable_length()));
  put(out, static_cast<std::int32_t>(gp.get_response_status()));
  put(out, static_cast<std::uint8_t>(gp.is_dmi_allowed()));
  put(out, static_cast<std::int32_t>(gp.get_gp_option()));
}

const unsigned char* unpack_packet(const unsigned char* in, const unsigned char* end,
                                   tlm::tlm_generic_payload& gp) {
  auto* p = dynamic_cast<Packet*>(&gp);
  if (!p) throw std::logic_error("unpack_packet: the payload is not a podsim Packet");
  Reader r(in, end);
  const auto version = r.get<unsigned char>("the version");
  if (version != kPacketWireVersion)
    Reader::fail("format version " + std::to_string(version) + ", this podsim reads " +
                 std::to_string(kPacketWireVersion));

  // Everything is read and checked before the packet is touched.
  Access a;
  a.id = r.get<std::uint64_t>("id");
  a.src = r.get<AccelId>("src");
  a.dst = r.get<AccelId>("dst");
  a.route_to = r.get<AccelId>("route_to");
  a.kind = r.get_enum("kind", PacketKind::Request, PacketKind::Control);
  a.op = r.get_enum("op", AccessOp::Read, AccessOp::Atomic);
  a.status = r.get_enum("status", AccessStatus::Ok, AccessStatus::Unreachable);
  a.posted = r.get_bool("posted");
  a.sync = r.get_bool("sync");
  a.measured = r.get_enum("measured", Measured::No, Measured::Yes);
  a.mailbox = r.get_enum("mailbox", MailboxWrite::None, MailboxWrite::Writeback);
  a.size = r.get<std::uint32_t>("size");
  a.vmid = r.get<std::uint16_t>("vmid");
  a.vaddr = r.get<std::uint64_t>("vaddr");
  a.npa = r.get<std::uint64_t>("npa");
  a.pa = r.get<std::uint64_t>("pa");
  a.plane = r.get<std::uint32_t>("plane");
  a.tag = r.get<std::uint32_t>("tag");
  a.issued = Time::ps(r.get<std::int64_t>("issued"));
  a.hop_count = r.get<std::uint8_t>("hop_count");
  if (a.hop_count > Access::kMaxHops)
    Reader::fail("hop_count " + std::to_string(a.hop_count) + " is above " +
                 std::to_string(Access::kMaxHops));
  a.hops_dropped = r.get<std::uint8_t>("hops_dropped");
  r.bytes(a.hops.data(), a.hop_count * sizeof(HopStamp), "the hops");
  for (std::size_t i = 0; i < a.hop_count; ++i)
    if (a.hops[i].kind() >= HopKind::Count)
      Reader::fail("hop " + std::to_string(i) + " has no hop kind");
  r.bytes(a.data.data(), a.data.size(), "the data");
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

  p->access.copy_from(a);  // keeps the packet's own Access the packet's
  gp.set_command(command);
  gp.set_address(address);
  gp.set_data_ptr(p->access.data.data());
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
