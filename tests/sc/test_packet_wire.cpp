// A packet packed into bytes and unpacked into another pooled packet (how a packet crosses from
// one MPI rank to another): every field arrives, and of the data the bytes the packet carries
// (the receiving packet keeps its own beyond them), the new packet's data pointer is its own and
// its reference count is untouched; short and malformed bytes are errors that leave the packet
// as it was; a payload that is not a podsim packet is refused.
#include <fmt/format.h>
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "sim/kernel/access.hpp"
#include "sim/kernel/packet_wire.hpp"

using namespace podsim;
using Catch::Contains;

namespace {

const Access& access_in(const tlm::tlm_generic_payload& gp) {
  return static_cast<const Packet&>(gp).access;
}

// Every field set, each to a value no other field (and no fresh packet) has.
void fill(tlm::tlm_generic_payload& gp, std::size_t hops, unsigned seed) {
  Access& a = access_of(gp);
  a.id = 0x0102'0304'0506'0708ull + seed;
  a.src = static_cast<AccelId>(11 + seed);
  a.dst = static_cast<AccelId>(12 + seed);
  a.route_to = static_cast<AccelId>(13 + seed);
  a.kind = seed % 2 ? PacketKind::Control : PacketKind::Response;
  a.op = seed % 2 ? AccessOp::Write : AccessOp::Atomic;
  a.status = seed % 2 ? AccessStatus::RemoteFault : AccessStatus::Unreachable;
  a.posted = seed % 2 == 0;
  a.sync = seed % 2 == 1;
  a.measured = static_cast<Measured>(seed % 2);
  a.mailbox = seed % 2 ? MailboxWrite::Doorbell : MailboxWrite::Writeback;
  a.size = 192 + seed;
  a.vmid = static_cast<std::uint16_t>(14 + seed);
  a.data_bytes = static_cast<std::uint16_t>(Access::kMaxData - 40 + seed);
  a.vaddr = 0x7f00'0000'1000ull + seed;
  a.npa = 0x0200'0000'2000ull + seed;
  a.pa = 0x0000'0003'3000ull + seed;
  a.plane = 15 + seed;
  a.tag = 16 + seed;
  a.issued = Time::ps(1'234'567 + seed);
  a.grant = 0x0300'0000'4000ull + seed;
  a.hop_count = 0;
  a.hops_dropped = 0;
  for (std::size_t i = 0; i < hops; ++i) {
    a.kind = i % 3 ? PacketKind::Request : PacketKind::Response;  // both directions stamped
    a.stamp(static_cast<HopKind>(i % static_cast<std::size_t>(HopKind::Count)),
            Time::ps(static_cast<std::int64_t>(1'000 * i + seed)));
  }
  a.kind = seed % 2 ? PacketKind::Control : PacketKind::Response;
  for (std::size_t i = 0; i < a.data.size(); ++i)
    a.data[i] = static_cast<unsigned char>(i * 7 + 3 + seed);
  gp.set_command(seed % 2 ? tlm::TLM_WRITE_COMMAND : tlm::TLM_IGNORE_COMMAND);
  gp.set_address(0xABCD'0000ull + seed);
  gp.set_data_length(160 + seed);
  gp.set_streaming_width(128 + seed);
  gp.set_byte_enable_length(seed);
  gp.set_response_status(seed % 2 ? tlm::TLM_ADDRESS_ERROR_RESPONSE
                                  : tlm::TLM_BURST_ERROR_RESPONSE);
  gp.set_dmi_allowed(seed % 2 == 0);
  gp.set_gp_option(seed % 2 ? tlm::TLM_FULL_PAYLOAD : tlm::TLM_FULL_PAYLOAD_ACCEPTED);
}

void check_same(const tlm::tlm_generic_payload& x, const tlm::tlm_generic_payload& y) {
  const Access& a = access_in(x);
  const Access& b = access_in(y);
  CHECK(a.id == b.id);
  CHECK(a.src == b.src);
  CHECK(a.dst == b.dst);
  CHECK(a.route_to == b.route_to);
  CHECK(a.kind == b.kind);
  CHECK(a.op == b.op);
  CHECK(a.status == b.status);
  CHECK(a.posted == b.posted);
  CHECK(a.sync == b.sync);
  CHECK(a.measured == b.measured);
  CHECK(a.mailbox == b.mailbox);
  CHECK(a.size == b.size);
  CHECK(a.vmid == b.vmid);
  REQUIRE(a.data_bytes == b.data_bytes);
  CHECK(a.vaddr == b.vaddr);
  CHECK(a.npa == b.npa);
  CHECK(a.pa == b.pa);
  CHECK(a.plane == b.plane);
  CHECK(a.tag == b.tag);
  CHECK(a.issued == b.issued);
  CHECK(a.grant == b.grant);
  CHECK(a.hops_dropped == b.hops_dropped);
  REQUIRE(a.hop_count == b.hop_count);
  for (std::size_t i = 0; i < a.hop_count; ++i) {
    INFO("hop " << i);
    CHECK(a.hops[i].at() == b.hops[i].at());
    CHECK(a.hops[i].kind() == b.hops[i].kind());
    CHECK(a.hops[i].response() == b.hops[i].response());
  }
  CHECK(std::equal(a.data.begin(), a.data.begin() + a.data_bytes, b.data.begin()));
  CHECK(x.get_command() == y.get_command());
  CHECK(x.get_address() == y.get_address());
  CHECK(x.get_data_length() == y.get_data_length());
  CHECK(x.get_streaming_width() == y.get_streaming_width());
  CHECK(x.get_byte_enable_ptr() == nullptr);
  CHECK(y.get_byte_enable_ptr() == nullptr);
  CHECK(x.get_byte_enable_length() == y.get_byte_enable_length());
  CHECK(x.get_response_status() == y.get_response_status());
  CHECK(x.is_dmi_allowed() == y.is_dmi_allowed());
  CHECK(x.get_gp_option() == y.get_gp_option());
}

// The packet's own things, which unpacking must leave alone or point home.
void check_own(const tlm::tlm_generic_payload& gp, int ref_count) {
  CHECK(gp.get_data_ptr() == access_in(gp).data.data());
  CHECK(gp.get_ref_count() == ref_count);
  CHECK(gp.get_extension<Access>() == &access_in(gp));
  CHECK(gp.has_mm());
}

ByteBuffer packed(const tlm::tlm_generic_payload& gp) {
  ByteBuffer out;
  pack_packet(gp, out);
  return out;
}

}  // namespace

TEST_CASE("a packed packet unpacks into another pooled packet with every field equal",
          "[packet_wire]") {
  const std::size_t hops = GENERATE(std::size_t{0}, std::size_t{7}, Access::kMaxHops,
                                    Access::kMaxHops + 3);  // the last drops 3 stamps
  INFO(hops << " stamps");
  PacketPool pool;
  auto& src = pool.acquire();
  fill(src, hops, 1);
  CHECK(access_in(src).hop_count == std::min(hops, Access::kMaxHops));
  // The receiving packet was used before: every field differs from the sent one's.
  auto& dst = pool.acquire();
  fill(dst, 5, 2);
  dst.acquire();  // someone else holds it too: the count must stay 2
  std::array<unsigned char, 8> elsewhere{};
  dst.set_data_ptr(elsewhere.data());  // and its data pointer wandered: unpacking brings it home

  ByteBuffer buf{0xEE};  // something before it: pack appends
  pack_packet(src, buf);
  const unsigned char* end = buf.data() + buf.size();
  CHECK(unpack_packet(buf.data() + 1, end, dst) == end);
  check_same(src, dst);
  check_own(dst, 2);
  CHECK(dst.get_data_ptr() != src.get_data_ptr());
  // And the sent packet is as it was.
  check_own(src, 1);
  dst.release();
  dst.release();
  src.release();
  CHECK(pool.in_use() == 0);
}

TEST_CASE("packets packed one after another unpack in order", "[packet_wire]") {
  PacketPool pool;
  auto& a = pool.acquire();
  auto& b = pool.acquire();
  fill(a, 3, 5);
  fill(b, 9, 6);
  ByteBuffer buf;
  pack_packet(a, buf);
  const std::size_t first = buf.size();
  pack_packet(b, buf);
  auto& x = pool.acquire();
  auto& y = pool.acquire();
  const unsigned char* end = buf.data() + buf.size();
  const unsigned char* p = unpack_packet(buf.data(), end, x);
  CHECK(p == buf.data() + first);
  CHECK(unpack_packet(p, end, y) == end);
  check_same(a, x);
  check_same(b, y);
  for (auto* gp : {&a, &b, &x, &y})
    gp->release();
}

TEST_CASE("short and malformed bytes are errors that leave the packet as it was", "[packet_wire]") {
  PacketPool pool;
  auto& src = pool.acquire();
  fill(src, 4, 1);
  auto& dst = pool.acquire();
  fill(dst, 2, 2);
  const ByteBuffer whole = packed(src);
  const ByteBuffer before = packed(dst);
  ByteBuffer buf = whole;
  const auto unpack = [&] { unpack_packet(buf.data(), buf.data() + buf.size(), dst); };
  // Offsets in the format: the version (1 byte), id (8), src, dst, route_to (2 each), kind,
  // op, status, posted, sync, measured, mailbox (1 each), size (4), vmid, data_bytes (2 each),
  // vaddr, npa, pa (8 each), plane, tag (4 each), issued, grant (8 each), hop_count,
  // hops_dropped (1 each), the stamps (8 each), the data (data_bytes), the command (4)...
  constexpr std::size_t kKind = 15, kPosted = 18, kSync = 19, kMeasured = 20, kMailbox = 21,
                        kDataBytes = 28, kHopCount = 78, kHops = 80;
  const std::size_t kCommand = kHops + 4 * 8 + access_in(src).data_bytes;
  REQUIRE(buf[kKind] == static_cast<unsigned char>(PacketKind::Control));
  REQUIRE(buf[kHopCount] == 4);

  SECTION("cut anywhere") {
    for (std::size_t cut = 0; cut < whole.size(); ++cut) {
      INFO("cut at " << cut << " of " << whole.size());
      buf.assign(whole.begin(), whole.begin() + static_cast<std::ptrdiff_t>(cut));
      CHECK_THROWS_WITH(unpack(), Contains("the buffer ends inside"));
    }
  }
  SECTION("another version") {
    buf[0] = kPacketWireVersion + 1;
    CHECK_THROWS_WITH(unpack(), Contains(fmt::format("format version {}, this podsim reads {}",
                                                     kPacketWireVersion + 1, kPacketWireVersion)));
  }
  SECTION("more data than a packet holds") {
    const std::uint16_t n = Access::kMaxData + 1;
    std::memcpy(&buf[kDataBytes], &n, 2);
    buf.resize(buf.size() + Access::kMaxData);  // long enough that the count is the fault
    CHECK_THROWS_WITH(unpack(), Contains("data_bytes 257 is above 256"));
  }
  SECTION("more hops than a packet holds") {
    buf[kHopCount] = Access::kMaxHops + 1;
    buf.resize(buf.size() + 8 * Access::kMaxHops);  // long enough that the count is the fault
    CHECK_THROWS_WITH(unpack(), Contains(fmt::format("hop_count {} is above {}",
                                                     Access::kMaxHops + 1, Access::kMaxHops)));
  }
  SECTION("a value no field can hold") {
    SECTION("kind") {
      buf[kKind] = 3;
      CHECK_THROWS_WITH(unpack(), Contains("kind 3 is out of range"));
    }
    SECTION("posted") {
      buf[kPosted] = 2;
      CHECK_THROWS_WITH(unpack(), Contains("posted 2 is not a bool"));
    }
    SECTION("sync") {
      buf[kSync] = 9;
      CHECK_THROWS_WITH(unpack(), Contains("sync 9 is not a bool"));
    }
    SECTION("measured") {
      buf[kMeasured] = 7;
      CHECK_THROWS_WITH(unpack(), Contains("measured 7 is out of range"));
    }
    SECTION("mailbox") {
      buf[kMailbox] = 5;
      CHECK_THROWS_WITH(unpack(), Contains("mailbox 5 is out of range"));
    }
    SECTION("a stamp's hop kind") {
      buf[kHops + 8 + 7] = static_cast<unsigned char>(HopKind::Count);  // stamp 1's top byte
      CHECK_THROWS_WITH(unpack(), Contains("hop 1 has no hop kind"));
    }
    SECTION("the command") {
      REQUIRE(buf[kCommand] == tlm::TLM_WRITE_COMMAND);
      buf[kCommand] = 3;
      CHECK_THROWS_WITH(unpack(), Contains("the command 3 is out of range"));
    }
  }
  CHECK(packed(dst) == before);
  check_own(dst, 1);
  src.release();
  dst.release();
}

TEST_CASE("of the data, only the bytes a packet carries travel: the receiver keeps its own",
          "[packet_wire]") {
  // A load's request carries none, a 64-byte store 64, a full one all (Access::data_bytes).
  const std::uint16_t n =
      GENERATE(std::uint16_t{0}, std::uint16_t{64}, static_cast<std::uint16_t>(Access::kMaxData));
  INFO(n << " bytes carried");
  PacketPool pool;
  auto& src = pool.acquire();
  fill(src, 3, 1);
  access_of(src).data_bytes = n;
  auto& dst = pool.acquire();
  fill(dst, 2, 2);
  const auto before = access_in(dst).data;
  const ByteBuffer small = packed(src);
  access_of(src).data_bytes = static_cast<std::uint16_t>(Access::kMaxData);
  CHECK(packed(src).size() - small.size() == Access::kMaxData - n);  // nothing else is sent
  access_of(src).data_bytes = n;
  CHECK(unpack_packet(small.data(), small.data() + small.size(), dst) ==
        small.data() + small.size());
  check_same(src, dst);
  const Access& got = access_in(dst);
  CHECK(std::equal(got.data.begin() + n, got.data.end(), before.begin() + n));
  // The carried bytes did change (the two packets' data differ everywhere).
  if (n > 0) CHECK_FALSE(std::equal(got.data.begin(), got.data.begin() + n, before.begin()));
  src.release();
  dst.release();
}

TEST_CASE("a packet that says it carries more data than it holds is refused", "[packet_wire]") {
  PacketPool pool;
  auto& gp = pool.acquire();
  access_of(gp).data_bytes = Access::kMaxData + 1;
  ByteBuffer buf;
  CHECK_THROWS_WITH(pack_packet(gp, buf), Contains("data_bytes is above"));
  CHECK(buf.empty());
  gp.release();
}

TEST_CASE("a payload that is not a podsim packet is refused", "[packet_wire]") {
  PacketPool pool;
  ByteBuffer buf;
  std::array<unsigned char, 64> elsewhere{};

  SECTION("a plain payload") {
    tlm::tlm_generic_payload plain;
    plain.set_data_ptr(elsewhere.data());
    plain.set_data_length(64);
    CHECK_THROWS_AS(pack_packet(plain, buf), std::logic_error);
    auto& gp = pool.acquire();
    fill(gp, 1, 1);
    const ByteBuffer bytes = packed(gp);
    CHECK_THROWS_AS(unpack_packet(bytes.data(), bytes.data() + bytes.size(), plain),
                    std::logic_error);
    gp.release();
  }
  SECTION("a packet pointed at other data") {
    auto& gp = pool.acquire();
    gp.set_data_ptr(elsewhere.data());
    CHECK_THROWS_WITH(pack_packet(gp, buf), Contains("data pointer is not its own"));
    gp.set_data_ptr(access_of(gp).data.data());
    gp.release();
  }
  SECTION("a packet with byte enables") {
    auto& gp = pool.acquire();
    gp.set_byte_enable_ptr(elsewhere.data());
    gp.set_byte_enable_length(8);
    CHECK_THROWS_WITH(pack_packet(gp, buf), Contains("byte enables"));
    gp.set_byte_enable_ptr(nullptr);
    gp.set_byte_enable_length(0);
    gp.release();
  }
  CHECK(buf.empty());  // nothing appended before the refusal
}
