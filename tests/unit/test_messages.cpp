#include <catch2/catch.hpp>

#include "driver_model/messages.hpp"
#include "models/npa_mmu/npa_layout.hpp"

using namespace podsim;
using namespace podsim::driver;

TEST_CASE("NPA_REQ carries handle lo (without the ID bits) and hi, the exporter restores lo",
          "[messages]") {
  Message m;
  m.type = MsgType::NpaReq;
  m.handle = {0x1234'5678'9ABC'D005ull, 0xFEED'FACE'CAFE'BEEFull};  // exporter ID 5
  Dwords dw = encode(m);
  CHECK((dw[0] & 0x3FF) == 3);
  CHECK(dw[1] == 0x1234'5678u);
  CHECK(dw[2] == 0xCAFE'BEEFu);
  CHECK(dw[3] == 0xFEED'FACEu);
  Message out;
  REQUIRE(decode(dw, /*sender=*/9, /*self=*/5, out));
  CHECK(out.type == MsgType::NpaReq);
  CHECK(out.handle == m.handle);
}

TEST_CASE("NPA_RSP carries size and the stripped NPA, the importer restores lo from the sender",
          "[messages]") {
  Message m;
  m.type = MsgType::NpaRsp;
  m.handle.lo = 0xAAAA'BBBB'CCCC'0007ull;
  m.size_pages = 256;
  m.npa_page = 0x200;
  Dwords dw = encode(m);
  CHECK(dw[2] == 256);
  CHECK(dw[3] == 0x200);
  Message out;
  REQUIRE(decode(dw, /*sender=*/7, /*self=*/1, out));
  CHECK(out.handle.lo == m.handle.lo);
  CHECK(out.size_pages == 256);
  CHECK(out.npa_page == 0x200);
}

TEST_CASE("HELLO carries receiver and sender, FAIL its reason, unknown types are refused",
          "[messages]") {
  Message h;
  h.type = MsgType::Hello;
  h.hello_recv = 300;
  h.hello_sender = 1023;
  Message out;
  REQUIRE(decode(encode(h), 1023, 300, out));
  CHECK(out.hello_recv == 300);
  CHECK(out.hello_sender == 1023);

  Message f;
  f.type = MsgType::NpaFail;
  f.handle.lo = 0x400 | 3;
  f.reason = FailReason::NoSpace;
  REQUIRE(decode(encode(f), 3, 0, out));
  CHECK(out.reason == FailReason::NoSpace);
  CHECK(out.handle.lo == f.handle.lo);
  CHECK_FALSE(decode(Dwords{0, 0, 0, 0}, 1, 2, out));
  CHECK_FALSE(decode(Dwords{9, 0, 0, 0}, 1, 2, out));
}

TEST_CASE("the doorbell's address is 0xFFF<<40 | dst<<30 | port<<8 | ring-select<<6",
          "[messages][layout]") {
  // Ring select (PMI): 0 for interrupts, 1 for TLB shootdowns (+0x40).
  CHECK(doorbell_npa(1, 1, 1) == 0xFFF0040000140ull);
  CHECK(doorbell_npa(5, 3, 0) == (0xFFFull << 40 | 5ull << 30 | 3ull << 8));
  CHECK(doorbell_npa(1023, 0, 1) == (0xFFFull << 40 | 1023ull << 30 | 0x40));
}
