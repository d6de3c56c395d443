// The driver model's rules, one test each, with no SystemC (see driver_world.hpp).
#include <fmt/format.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string_view>

#include "tests/unit/driver_world.hpp"

using namespace podsim;
using namespace podsim::driver;
using podsim::test::World;

namespace {
constexpr std::uint64_t kVa = 0x1000'0000;
}

// ---- buffers -----------------------------------------------------------------------------

TEST_CASE("buffers: user mode cannot allocate NPA memory, a full VRAM is ENOMEM",
          "[driver][buffers]") {
  World w(1);
  CHECK(w.call(w.d(0).gem_create(1, Bytes(4096), Domain::Npa)).err == Errno::Inval);
  w.env(0).free_pages = 10;
  CHECK(w.call(w.d(0).gem_create(1, Bytes(11 * 4096), Domain::Vram)).err == Errno::NoMem);
  CHECK(w.call(w.d(0).gem_create(1, Bytes(10 * 4096), Domain::Vram)).ok());
}

TEST_CASE("buffers: an imported (NPA) buffer cannot be CPU-mapped, a VRAM one can",
          "[driver][buffers]") {
  World w(2);
  GemHandle local = w.buffer(0);
  CHECK(w.call(w.d(0).gem_cpu_map(1, local)) == Errno::Ok);
  GemHandle remote = w.import_and_map(0, w.exported(1), kVa);
  CHECK(w.call(w.d(0).gem_cpu_map(1, remote)) == Errno::Inval);
  CHECK(w.call(w.d(0).gem_cpu_map(1, 999)) == Errno::NoEnt);
}

TEST_CASE("buffers: the last reference frees the VRAM, a mapping holds a reference",
          "[driver][buffers]") {
  World w(1);
  const auto before = w.env(0).free_pages;
  GemHandle g = w.buffer(0, 8 * 4096);
  CHECK(w.env(0).free_pages == before - 8);
  REQUIRE(w.call(w.d(0).gem_va_map(1, g, kVa)) == Errno::Ok);
  CHECK(w.env(0).gpuvm.size() == 8);
  REQUIRE(w.call(w.d(0).gem_close(1, g)) == Errno::Ok);
  CHECK(w.env(0).free_pages == before - 8);  // still mapped
  w.call(w.d(0).process_exit(1));
  CHECK(w.env(0).free_pages == before);
  CHECK(w.env(0).gpuvm.empty());
  CHECK(w.d(0).holdings().buffers == 0);
}

// ---- export ------------------------------------------------------------------------------

TEST_CASE("export: ENOENT for no such buffer, EOPNOTSUPP for non-VRAM and an inactive link",
          "[driver][export]") {
  World w(2);
  CHECK(w.call(w.d(0).export_handle(1, 42)).err == Errno::NoEnt);
  auto gtt = w.call(w.d(0).gem_create(1, Bytes(4096), Domain::Gtt));
  REQUIRE(gtt.ok());
  CHECK(w.call(w.d(0).export_handle(1, gtt.value)).err == Errno::OpNotSupp);
  GemHandle g = w.buffer(0);
  w.d(0).set_ualink_active(false);
  CHECK(w.call(w.d(0).export_handle(1, g)).err == Errno::OpNotSupp);
}

TEST_CASE("export: the same buffer always gives the same handle", "[driver][export]") {
  World w(4);
  GemHandle g = w.buffer(3);
  auto h1 = w.call(w.d(3).export_handle(1, g));
  auto h2 = w.call(w.d(3).export_handle(1, g));
  REQUIRE(h1.ok());
  CHECK(h1.value == h2.value);
  CHECK(w.d(3).exports() == 1);
  CHECK_FALSE(w.exported(3) == h1.value);  // another buffer, another handle
}

TEST_CASE("export: 128-bit handles, low 10 bits the exporter's ID, never 0, unique, seeded",
          "[driver][export]") {
  World w(600);
  std::set<std::uint64_t> los;
  for (int i = 0; i < 50; ++i) {
    UalinkHandle h = w.exported(517, 4096);
    CHECK(h.exporter() == 517);
    CHECK(h.lo != 0);
    CHECK(los.insert(h.lo).second);
  }
  World a(2, NpaAddrMode::SourceAliasing, 1), b(2, NpaAddrMode::SourceAliasing, 1),
      c(2, NpaAddrMode::SourceAliasing, 2);
  CHECK(a.exported(1) == b.exported(1));
  CHECK_FALSE(a.exported(1) == c.exported(1));
}

// ---- connections -------------------------------------------------------------------------

TEST_CASE("connections: HELLO / HELLO_ACK take both sides to ESTABLISHED, generation 1",
          "[driver][connection]") {
  World w(2);
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  UalinkHandle h = w.exported(1);
  std::optional<Result<Fd>> r;
  w.start(w.d(0).import_handle(1, h), r);
  w.run_for(World::kConsumed + Time::us(2) + Time::ns(500) + Time::ns(100));
  CHECK(w.d(0).connection(1) == ConnState::InProgress);  // HELLO sent, waiting for the ACK
  w.run_for(World::kDeliver);
  CHECK(w.d(1).connection(0) == ConnState::Pending);  // HELLO taken, HELLO_ACK being sent
  w.run();
  REQUIRE(r);
  CHECK(r->ok());
  CHECK(w.d(0).connection(1) == ConnState::Established);
  CHECK(w.d(1).connection(0) == ConnState::Established);
  CHECK(w.d(0).generation(1) == 1);
  CHECK(w.d(1).generation(0) == 1);
  CHECK(w.d(0).messages_sent(MsgType::Hello) == 1);
  CHECK(w.d(1).messages_sent(MsgType::HelloAck) == 1);
}

TEST_CASE("connections: both sides saying HELLO at once still end ESTABLISHED",
          "[driver][connection]") {
  World w(2);
  UalinkHandle h0 = w.exported(0), h1 = w.exported(1);
  std::optional<Result<Fd>> a, b;
  w.start(w.d(0).import_handle(1, h1), a);
  w.start(w.d(1).import_handle(1, h0), b);
  w.run();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->ok());
  CHECK(b->ok());
  CHECK(w.d(0).connection(1) == ConnState::Established);
  CHECK(w.d(1).connection(0) == ConnState::Established);
}

TEST_CASE("connections: no HELLO_ACK within 5 s -> NOT_READY and ETIMEDOUT",
          "[driver][connection]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  w.env(1).deaf = true;  // takes our HELLO, never answers
  const Time t0 = w.now();
  auto r = w.import(0, h);
  CHECK(r.err == Errno::TimedOut);
  CHECK(w.now() - t0 >= Time::ms(5000));
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  CHECK(w.d(0).imports() == 0);
}

TEST_CASE("transport: a message never consumed is ETIME after 2 s of polling",
          "[driver][connection]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  w.env(1).dead = true;  // its firmware takes nothing
  const Time t0 = w.now();
  auto r = w.import(0, h);
  CHECK(r.err == Errno::Time);
  CHECK(w.now() - t0 >= Time::ms(2000));
  CHECK(w.now() - t0 < Time::ms(5000));
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
}

TEST_CASE("connections: a second import while the handshake is in progress is EAGAIN",
          "[driver][connection]") {
  World w(2);
  UalinkHandle a = w.exported(1), b = w.exported(1);
  std::optional<Result<Fd>> first, second;
  w.start(w.d(0).import_handle(1, a), first);
  w.run_for(Time::us(4));  // the first is waiting for HELLO_ACK
  REQUIRE(w.d(0).connection(1) == ConnState::InProgress);
  w.start(w.d(0).import_handle(1, b), second);
  w.run();
  CHECK(first->ok());
  CHECK(second->err == Errno::Again);
}

TEST_CASE("connections: HELLO from a peer we are ESTABLISHED with resets what we held with it",
          "[driver][connection]") {
  World w(2);
  GemHandle g;
  UalinkHandle from1 = w.exported(1);
  UalinkHandle from0 = w.exported(0, 1 << 20, 1, &g);
  w.import_and_map(0, from1, kVa);
  w.import_and_map(1, from0, kVa);
  REQUIRE(w.d(0).pin_count(1, g) == 1);
  REQUIRE(w.env(0).npa.size() == 256);

  // GPU 1 is reset and comes back: it knows nothing, and says HELLO when it next imports.
  w.d(1).device_reset();
  UalinkHandle again = w.exported(0);
  REQUIRE(w.import(1, again).ok());
  // GPU 0 tore down its import from 1 (its mapping is gone) and dropped 1's import of its
  // buffer: unpinned, unmapped, range freed, and noted as released.
  CHECK(w.d(0).generation(1) == 2);
  CHECK(w.d(0).import_state(from1) == ImportState::Teardown);
  CHECK(w.env(0).gpuvm.empty());
  CHECK(w.d(0).pin_count(1, g) == 0);
  CHECK(w.d(0).importer_count(from0) == 0);
  CHECK(w.env(0).released.count({from0.lo, 1}) == 1);
}

TEST_CASE("connections: B1 reintroduced, the reset on HELLO never runs", "[driver][connection]") {
  DriverConfig cfg;
  cfg.reintroduce_bugs = {"B1"};
  World w(2, NpaAddrMode::SourceAliasing, 1, cfg);
  GemHandle g;
  UalinkHandle from0 = w.exported(0, 1 << 20, 1, &g);
  w.import_and_map(1, from0, kVa);
  w.d(1).device_reset();
  REQUIRE(w.import(1, w.exported(0)).ok());
  CHECK(w.d(0).generation(1) == 2);
  CHECK(w.d(0).pin_count(1, g) == 1);  // still pinned for an importer that forgot it
  CHECK(w.d(0).importer_count(from0) == 1);
}

// ---- import ------------------------------------------------------------------------------

TEST_CASE("import: NPA_REQ / NPA_RSP give a buffer in the NPA domain over one NPA range",
          "[driver][import]") {
  World w(2);
  GemHandle g;
  UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
  auto fd = w.import(0, h);
  REQUIRE(fd.ok());
  CHECK(w.d(0).messages_sent(MsgType::NpaReq) == 1);
  CHECK(w.d(1).messages_sent(MsgType::NpaRsp) == 1);
  // The exporter pinned the buffer once and mapped its scattered pages onto one NPA range
  // from page 0x800 (source-aliasing ranges start above the rings' receive pages), then
  // flushed its NPA TLB.
  CHECK(w.d(1).pin_count(1, g) == 1);
  CHECK(w.d(1).importer_count(h) == 1);
  const auto& npa = w.env(1).npa;
  REQUIRE(npa.size() == 256);
  CHECK(npa.begin()->first == 0x800);
  CHECK(std::prev(npa.end())->first == 0x800 + 255);
  CHECK(std::next(npa.begin())->second.page - npa.begin()->second.page == 2);
  CHECK(npa.begin()->second.tag == h.lo);
  CHECK(w.env(1).npa_flushes == 1);
  // The importer maps it like any buffer; its PTEs carry NPAs with the exporter's ID.
  auto gem = w.call(w.d(0).prime_fd_to_handle(1, fd.value));
  REQUIRE(gem.ok());
  REQUIRE(w.call(w.d(0).gem_va_map(1, gem.value, kVa)) == Errno::Ok);
  const Pte& p0 = w.env(0).gpuvm.at({1, kVa >> 12});
  CHECK(p0.target == PteTarget::Npa);
  CHECK((p0.frame >> kNpaWindowPageBits) == 1);
  CHECK((p0.frame & kNpaWindowPageMask) == 0x800);
  CHECK(w.d(0).gem_size(1, gem.value) == Bytes(1 << 20));
}

TEST_CASE("import: again returns a new reference to the same buffer, closing keeps the node",
          "[driver][import]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  auto fd1 = w.import(0, h);
  const auto reqs = w.d(0).messages_sent(MsgType::NpaReq);
  auto fd2 = w.import(0, h);
  REQUIRE(fd1.ok());
  REQUIRE(fd2.ok());
  CHECK(fd1.value != fd2.value);
  CHECK(w.d(0).messages_sent(MsgType::NpaReq) == reqs);
  auto g1 = w.call(w.d(0).prime_fd_to_handle(1, fd1.value));
  auto g2 = w.call(w.d(0).prime_fd_to_handle(1, fd2.value));
  w.call(w.d(0).gem_va_map(1, g1.value, kVa));
  w.call(w.d(0).gem_va_map(1, g2.value, 2 * kVa));
  CHECK(w.env(0).gpuvm.at({1, kVa >> 12}).frame == w.env(0).gpuvm.at({1, 2 * kVa >> 12}).frame);
  // Closing every fd and handle never sends RELEASE; the import node lives on.
  w.call(w.d(0).process_exit(1));
  CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 0);
  CHECK(w.d(0).import_state(h) == ImportState::Ready);
  CHECK(w.import(0, h, 2).ok());  // another process gets it from the table
}

TEST_CASE("import: a concurrent import of the same handle gets EAGAIN", "[driver][import]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  std::optional<Result<Fd>> a, b;
  w.start(w.d(0).import_handle(1, h), a);
  w.run_for(Time::us(10));  // the first has its node in the table, NOT_READY
  w.start(w.d(0).import_handle(2, h), b);
  w.run();
  CHECK(a->ok());
  CHECK(b->err == Errno::Again);
}

TEST_CASE("import: losing the insert race is EBUSY", "[driver][import]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  std::optional<Result<Fd>> a, b;
  w.start(w.d(0).import_handle(1, h), a);  // both look the handle up before either inserts
  w.start(w.d(0).import_handle(2, h), b);
  w.run();
  CHECK(a->ok());
  CHECK(b->err == Errno::Busy);
}

TEST_CASE("import: errors for bad IDs, other vPods and wrong handles", "[driver][import]") {
  World w(3);
  CHECK(w.import(0, UalinkHandle{(0xABCDull << 10) | 300, 7}).err == Errno::Inval);  // >= ACCEL_MAX
  UalinkHandle h = w.exported(1);
  UalinkHandle wrong_hi = h;
  wrong_hi.hi ^= 1;
  CHECK(w.import(0, wrong_hi).err == Errno::Inval);  // NPA_FAIL INVALID_HANDLE
  CHECK(w.d(0).imports() == 0);
  CHECK(w.import(0, UalinkHandle{h.lo ^ 0x400, h.hi}).err == Errno::Inval);  // unknown lo
  REQUIRE(w.import(0, h).ok());
  CHECK(w.import(0, wrong_hi).err == Errno::Inval);  // the table checks hi too (B5 fixed)
}

TEST_CASE("import: an exporter outside the importer's vPod is refused without a message",
          "[driver][import][vpod]") {
  World w(4);
  VpodInfo small;
  small.members.assign(kMaxAccels, false);
  small.members[0] = small.members[1] = true;
  Driver d0(DriverConfig{}, 0, small, NpaAddrMode::SourceAliasing, Rng(1), w.env(0));
  UalinkHandle h = w.exported(3);
  auto r = w.call(d0.import_handle(1, h));
  CHECK(r.err == Errno::Inval);
  CHECK(d0.messages_sent(MsgType::Hello) == 0);
}

TEST_CASE("import: the exporter refuses an importer outside its vPod (NPA_FAIL -> EINVAL)",
          "[driver][import][vpod]") {
  World w(3);
  // GPU 2's driver thinks it shares a vPod with 0; GPU 0's says it does not.
  VpodInfo only01;
  only01.members.assign(kMaxAccels, false);
  only01.members[0] = only01.members[1] = true;
  w.drivers[0] = std::make_unique<Driver>(DriverConfig{}, 0, only01, NpaAddrMode::SourceAliasing,
                                          Rng(5), w.env(0));
  GemHandle g;
  UalinkHandle h = w.exported(0, 1 << 20, 1, &g);
  auto r = w.import(2, h);
  CHECK(r.err == Errno::Inval);
  CHECK(w.d(0).messages_sent(MsgType::NpaFail) == 1);
  CHECK(w.d(0).pin_count(1, g) == 0);
  CHECK(w.d(0).importer_count(h) == 0);
  CHECK(w.import(1, h).ok());  // a member is served
}

TEST_CASE("import: an exporter that never answers NPA_REQ: ETIMEDOUT after 5 s, reset",
          "[driver][import]") {
  World w(2);
  REQUIRE(w.import(0, w.exported(1)).ok());  // the connection is up
  UalinkHandle h = w.exported(1);
  w.env(1).deaf = true;  // its firmware consumes our NPA_REQ; its driver never sees it
  const Time t0 = w.now();
  auto r = w.import(0, h);
  CHECK(r.err == Errno::TimedOut);
  CHECK(w.now() - t0 >= Time::ms(5000));
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  CHECK(w.d(0).import_state(h) == ImportState::Teardown);  // the node is gone
}

TEST_CASE("import: a full ring is ENOSPC, NPA_FAIL NOSPACE is ENOSPC", "[driver][import]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  w.env(0).ring_full = true;
  CHECK(w.import(0, h).err == Errno::NoSpc);
  w.env(0).ring_full = false;

  DriverConfig small;
  small.npa_window = Bytes::MiB(10);  // pages [0x800, 0xA00 - 1): 511 usable
  World t(2, NpaAddrMode::SourceAliasing, 1, small);
  CHECK(t.import(0, t.exported(1, 256 * 4096)).ok());
  CHECK(t.import(0, t.exported(1, 512 * 4096)).err == Errno::NoSpc);
}

TEST_CASE("ident mode: a range per importer in its own window", "[driver][import][ident]") {
  World w(3, NpaAddrMode::SourceIdentification);
  UalinkHandle h = w.exported(2);
  REQUIRE(w.import(0, h).ok());
  REQUIRE(w.import(1, h).ok());
  const auto& npa = w.env(2).npa;
  CHECK(npa.size() == 512);
  CHECK(npa.count((0ull << 29) | 512) == 1);
  CHECK(npa.count((1ull << 29) | 512) == 1);
  CHECK(w.d(2).importer_count(h) == 2);
}

TEST_CASE("ident mode: a second NPA_REQ from the same importer is FAIL DUPLICATE -> EINVAL",
          "[driver][import][ident]") {
  DriverConfig cfg;
  cfg.reintroduce_bugs = {"B1"};  // the exporter keeps the importer's range across its reset
  World w(2, NpaAddrMode::SourceIdentification, 1, cfg);
  UalinkHandle h = w.exported(1);
  REQUIRE(w.import(0, h).ok());
  w.d(0).device_reset();
  CHECK(w.import(0, h).err == Errno::Inval);
  CHECK(w.d(1).messages_sent(MsgType::NpaFail) == 1);
}

TEST_CASE("alias mode: a second NPA_REQ gets the same range again", "[driver][import]") {
  DriverConfig cfg;
  cfg.reintroduce_bugs = {"B1"};
  World w(2, NpaAddrMode::SourceAliasing, 1, cfg);
  GemHandle g;
  UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
  REQUIRE(w.import(0, h).ok());
  w.d(0).device_reset();
  REQUIRE(w.import(0, h).ok());
  CHECK(w.d(1).pin_count(1, g) == 2);  // pinned again (the snapshot's behaviour)
  CHECK(w.env(1).npa.size() == 256);   // one range
}

TEST_CASE("alias mode: importers share one range, each request pins", "[driver][import]") {
  World w(3);
  GemHandle g;
  UalinkHandle h = w.exported(2, 1 << 20, 1, &g);
  REQUIRE(w.import(0, h).ok());
  REQUIRE(w.import(1, h).ok());
  CHECK(w.d(2).importer_count(h) == 2);
  CHECK(w.d(2).pin_count(1, g) == 2);
  CHECK(w.env(2).npa.size() == 256);
}

// ---- revoke and release ------------------------------------------------------------------

TEST_CASE("revoke: closing the last handle revokes, importers invalidate and release",
          "[driver][revoke]") {
  World w(3);
  GemHandle g;
  UalinkHandle h = w.exported(2, 1 << 20, 1, &g);
  w.import_and_map(0, h, kVa);
  w.import_and_map(1, h, kVa);
  REQUIRE(w.env(0).gpuvm.size() == 256);

  REQUIRE(w.call(w.d(2).gem_close(1, g)) == Errno::Ok);
  // A heavyweight shootdown to each importer, NPA_REVOKE, and their NPA_RELEASE.
  CHECK(w.env(0).shootdowns_received == 1);
  CHECK(w.env(1).shootdowns_received == 1);
  CHECK(w.d(2).messages_sent(MsgType::NpaRevoke) == 2);
  CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 1);
  CHECK(w.d(1).messages_sent(MsgType::NpaRelease) == 1);
  // Importers: mappings gone, import node gone. Exporter: nothing left at all.
  CHECK(w.env(0).gpuvm.empty());
  CHECK(w.d(0).import_state(h) == ImportState::Teardown);
  CHECK(w.env(2).npa.empty());
  CHECK(w.env(2).released.count({h.lo, 0}) == 1);
  const Holdings held = w.d(2).holdings();
  CHECK(held.buffers == 0);
  CHECK(held.pins == 0);
  CHECK(held.npa_ranges == 0);
  CHECK(held.revoking == 0);
  CHECK(w.env(2).violations.empty());
  CHECK(w.d(2).revoke_time().histogram().count() == 1);
  // The importer's GEM handle survives without backing: mapping it again is refused.
  auto gems = w.call(w.d(0).gem_va_map(1, 1, 3 * kVa));
  CHECK(gems != Errno::Ok);
}

TEST_CASE("revoke: a buffer with GEM handles in two processes is revoked when the last goes",
          "[driver][revoke]") {
  World w(2);
  GemHandle g;
  UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
  w.import_and_map(0, h, kVa);
  // Process 1 exports its buffer as a dma-buf and passes the fd to process 2 of the same GPU,
  // which imports it: a second GEM handle for the buffer.
  auto fd = w.call(w.d(1).prime_handle_to_fd(1, g));
  REQUIRE(fd.ok());
  auto passed = w.d(1).pass_fd(1, fd.value, 2);
  REQUIRE(passed.ok());
  CHECK(w.d(1).pass_fd(1, fd.value + 100, 2).err == Errno::Inval);
  CHECK(w.call(w.d(1).prime_handle_to_fd(1, g + 100)).err == Errno::NoEnt);
  REQUIRE(w.call(w.d(1).close_fd(1, fd.value)) == Errno::Ok);
  auto g2 = w.call(w.d(1).prime_fd_to_handle(2, passed.value));
  REQUIRE(g2.ok());
  REQUIRE(w.call(w.d(1).close_fd(2, passed.value)) == Errno::Ok);
  // The export is the buffer's, not the handle's: process 2 exporting gets the same handle.
  auto again = w.call(w.d(1).export_handle(2, g2.value));
  REQUIRE(again.ok());
  CHECK(again.value.lo == h.lo);
  CHECK(again.value.hi == h.hi);

  // Importing the same fd again in one process gives the handle it has (DRM looks it up).
  auto fd2 = w.call(w.d(1).prime_handle_to_fd(2, g2.value));
  REQUIRE(fd2.ok());
  auto same = w.call(w.d(1).prime_fd_to_handle(2, fd2.value));
  REQUIRE(same.ok());
  CHECK(same.value == g2.value);
  REQUIRE(w.call(w.d(1).close_fd(2, fd2.value)) == Errno::Ok);

  // Two handles -> one: nothing happens to the export.
  REQUIRE(w.call(w.d(1).gem_close(1, g)) == Errno::Ok);
  CHECK(w.d(1).messages_sent(MsgType::NpaRevoke) == 0);
  CHECK(w.env(0).gpuvm.size() == 256);
  CHECK(w.d(1).exports() == 1);
  CHECK(w.d(1).holdings().pins == 1);
  // One -> none: revoked, the importer releases, nothing is left.
  REQUIRE(w.call(w.d(1).gem_close(2, g2.value)) == Errno::Ok);
  CHECK(w.d(1).messages_sent(MsgType::NpaRevoke) == 1);
  CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 1);
  CHECK(w.env(0).gpuvm.empty());
  CHECK(w.d(1).exports() == 0);
  const Holdings held = w.d(1).holdings();
  CHECK(held.buffers == 0);
  CHECK(held.pins == 0);
  CHECK(w.env(1).violations.empty());
}

TEST_CASE("revoke: an export with no importers just goes", "[driver][revoke]") {
  World w(1);
  GemHandle g;
  w.exported(0, 1 << 20, 1, &g);
  REQUIRE(w.call(w.d(0).gem_close(1, g)) == Errno::Ok);
  CHECK(w.d(0).holdings().buffers == 0);
  CHECK(w.d(0).exports() == 0);
  CHECK(w.d(0).revoking() == 0);
}

TEST_CASE("revoke: B3 reintroduced, the no-importer cleanup leaks the buffer",
          "[driver][revoke][bugs]") {
  DriverConfig cfg;
  cfg.reintroduce_bugs = {"B3"};
  World w(1, NpaAddrMode::SourceAliasing, 1, cfg);
  GemHandle g;
  w.exported(0, 1 << 20, 1, &g);
  REQUIRE(w.call(w.d(0).gem_close(1, g)) == Errno::Ok);
  const Holdings held = w.d(0).holdings();
  CHECK(held.buffers == 1);
  REQUIRE(held.details.size() == 1);
  CHECK_THAT(held.details[0].text,
             Catch::Contains("VRAM buffer") && Catch::Contains("1 reference"));
}

TEST_CASE("revoke: an importer that never releases is reset after 5 s", "[driver][revoke]") {
  World w(2);
  GemHandle g;
  UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
  w.import_and_map(0, h, kVa);
  // The importer's driver ignores the REVOKE (a mismatched hi looks the same to it).
  w.d(0).device_reset();
  w.env(0).dead = false;
  const Time t0 = w.now();
  REQUIRE(w.call(w.d(1).gem_close(1, g)) == Errno::Ok);
  w.run();
  CHECK(w.now() - t0 >= Time::ms(5000));
  CHECK(w.d(1).connection(0) == ConnState::NotReady);
  CHECK(w.d(1).holdings().buffers == 0);
  CHECK(w.d(1).holdings().npa_ranges == 0);
  std::uint64_t missing = 0;
  for (const Stat* s : w.d(1).stats().stats())
    if (s->name() == "releases_missing") missing = s->as<Counter>()->value();
  CHECK(missing == 1);
}

TEST_CASE("revoke: B6 reintroduced, a stale importer's range is freed under live PTEs",
          "[driver][revoke][bugs]") {
  for (bool b6 : {false, true}) {
    DriverConfig cfg;
    cfg.reintroduce_bugs = {"B1"};  // leaves a stale-generation importer behind
    if (b6) cfg.reintroduce_bugs.push_back("B6");
    World w(2, NpaAddrMode::SourceAliasing, 1, cfg);
    GemHandle g;
    UalinkHandle h = w.exported(0, 1 << 20, 1, &g);
    w.import_and_map(1, h, kVa);
    w.d(1).device_reset();
    REQUIRE(w.import(1, w.exported(0)).ok());  // generation 2: importer 1's entry is stale
    REQUIRE(w.call(w.d(0).gem_close(1, g)) == Errno::Ok);
    w.run();
    INFO("B6 " << b6);
    if (b6) {
      REQUIRE(w.env(0).violations.size() == 1);
      CHECK_THAT(w.env(0).violations[0],
                 Catch::Contains("freed while PTEs still map it") && Catch::Contains("gpu0"));
    } else {
      CHECK(w.env(0).violations.empty());
    }
  }
}

TEST_CASE("process exit closes everything: exports revoked, nothing held", "[driver][revoke]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  w.import_and_map(0, h, kVa);
  w.call(w.d(1).process_exit(1));
  w.call(w.d(0).process_exit(1));
  w.run();
  for (int i = 0; i < 2; ++i) {
    const Holdings held = w.d(i).holdings();
    INFO("gpu " << i);
    CHECK(held.buffers == 0);
    CHECK(held.pins == 0);
    CHECK(held.npa_ranges == 0);
    CHECK(held.exports == 0);
    CHECK(held.imports == 0);
    CHECK(held.handles == 0);
    CHECK(held.fds == 0);
    CHECK(held.waiters == 0);
    CHECK(held.busy_tasks == 0);
    CHECK(w.d(i).quiescent());
  }
}

// ---- device reset ------------------------------------------------------------------------

TEST_CASE("device reset: all state is gone and the driver works again", "[driver][reset]") {
  World w(2);
  UalinkHandle h = w.exported(1);
  w.import_and_map(0, h, kVa);
  w.d(0).device_reset();
  CHECK(w.d(0).imports() == 0);
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  CHECK(w.d(0).holdings().buffers == 0);
  // It can export and import again. The peer still thinks their connection is up: its first
  // NPA_REQ is dropped by the reset driver, which says HELLO instead; on that HELLO the peer
  // resets its side (the import in flight ends with EINVAL) and a retry goes through.
  UalinkHandle fresh = w.exported(0);
  CHECK(w.import(1, fresh).err == Errno::Inval);
  CHECK(w.d(1).connection(0) == ConnState::Established);
  CHECK(w.d(1).generation(0) == 2);
  CHECK(w.import(1, fresh).ok());
  CHECK(w.import(0, w.exported(1)).ok());
}

TEST_CASE("import: an NPA_RSP with a zero NPA or a zero size is EINVAL", "[driver][import]") {
  for (const auto& [npa, size] : {std::pair<std::uint32_t, std::uint32_t>{0, 256}, {512, 0}}) {
    INFO("npa " << npa << " size " << size);
    World w(2);
    REQUIRE(w.import(0, w.exported(1)).ok());  // the connection is up
    UalinkHandle h = w.exported(1);
    w.env(1).deaf = true;  // the exporter's driver never sees our NPA_REQ ...
    std::optional<Result<Fd>> r;
    w.start(w.d(0).import_handle(1, h), r);
    w.run_for(Time::us(100));
    Message rsp;  // ... and a malformed answer arrives instead
    rsp.type = MsgType::NpaRsp;
    rsp.handle = h;
    rsp.npa_page = npa;
    rsp.size_pages = size;
    w.d(0).on_interrupt(1, encode(rsp));
    w.run();
    REQUIRE(r);
    CHECK(r->err == Errno::Inval);
    CHECK(w.d(0).import_state(h) == ImportState::Teardown);
  }
}

TEST_CASE("connections: a HELLO_ACK nobody waits for is ignored", "[driver][connection]") {
  World w(2);
  Message ack;
  ack.type = MsgType::HelloAck;
  w.d(0).on_interrupt(1, encode(ack));
  w.run();
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  CHECK(w.d(0).generation(1) == 0);
}

// ---- the snapshot's flaws, each put back (gpu.driver.reintroduce_bugs) and fixed ------------

namespace {
std::uint64_t counter(const Driver& d, std::string_view name) {
  for (const Stat* s : d.stats().stats())
    if (s->name() == name) return s->as<Counter>()->value();
  FAIL("no counter " << name);
  return 0;
}
DriverConfig with_bug(bool on, const char* bug) {
  DriverConfig cfg;
  if (on) cfg.reintroduce_bugs = {bug};
  return cfg;
}
}  // namespace

TEST_CASE(
    "revoke: B4 reintroduced, a RELEASE that comes before the next importer is marked ends "
    "the wait, and that importer is reset",
    "[driver][revoke][bugs]") {
  std::optional<Time> fixed_revoke;
  for (bool b4 : {false, true}) {
    INFO("B4 " << b4);
    World w(3, NpaAddrMode::SourceAliasing, 1, with_bug(b4, "B4"));
    GemHandle g;
    UalinkHandle h = w.exported(2, 1 << 20, 1, &g);
    w.import_and_map(0, h, kVa);
    w.import_and_map(1, h, kVa);
    // GPU 2 first sees its NPA_REVOKE to GPU 0 consumed 50 us after writing it (a late poll of
    // the write-back page); GPU 0 has answered NPA_RELEASE by then, before GPU 2 goes on to
    // send GPU 1 its own.
    w.env(2).consumed_after[0] = Time::us(50);
    const Time t0 = w.now();
    std::optional<Errno> closed;
    w.start(w.d(2).gem_close(1, g), closed);
    std::optional<Time> revoked, gpu1_released;  // cleanup over; GPU 1's RELEASE sent
    std::uint64_t ranges_at_end = 99;
    while (w.now() - t0 < Time::ms(1)) {
      w.step(Time::ns(100));
      if (!revoked && closed && w.d(2).revoking() == 0) {
        revoked = w.now();
        ranges_at_end = w.d(2).holdings().npa_ranges;
      }
      if (!gpu1_released && w.d(1).messages_sent(MsgType::NpaRelease) == 1) gpu1_released = w.now();
    }
    w.run();
    REQUIRE(revoked);
    REQUIRE(gpu1_released);
    CHECK(ranges_at_end == 0);  // the cleanup freed the range before it ended
    CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 1);
    CHECK(w.env(2).violations.empty());
    const Time revoke_time =
        Time::ps(static_cast<std::int64_t>(w.d(2).revoke_time().histogram().max()));
    if (b4) {
      // GPU 0's RELEASE emptied the pending set while GPU 1 was not marked yet: the worker
      // did not wait; it freed the range, reset GPU 1 and ended before GPU 1's RELEASE went
      // out.
      CHECK(*revoked < *gpu1_released);
      CHECK(counter(w.d(2), "releases_missing") == 1);
      CHECK(counter(w.d(2), "connection_resets") == 1);
      CHECK(w.d(2).connection(1) == ConnState::NotReady);
      CHECK(w.d(2).connection(0) == ConnState::Established);
      CHECK(counter(w.d(2), "unsolicited") == 1);  // GPU 1's RELEASE found no revoke
      REQUIRE(fixed_revoke);
      CHECK(revoke_time < *fixed_revoke);
    } else {
      CHECK(*revoked > *gpu1_released);
      CHECK(counter(w.d(2), "releases_missing") == 0);
      CHECK(counter(w.d(2), "connection_resets") == 0);
      CHECK(w.d(2).connection(1) == ConnState::Established);
      CHECK(counter(w.d(2), "unsolicited") == 0);
      fixed_revoke = revoke_time;
    }
    CHECK(revoke_time < Time::ms(1));  // neither waited for release_timeout
  }
}

TEST_CASE("revoke: B4 reintroduced, the worker waits release_timeout when no NPA_REVOKE went out",
          "[driver][revoke][bugs]") {
  for (bool b4 : {false, true}) {
    INFO("B4 " << b4);
    World w(2, NpaAddrMode::SourceAliasing, 1, with_bug(b4, "B4"));
    GemHandle g;
    UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
    w.import_and_map(0, h, kVa);
    w.env(1).ring_full = true;  // the shootdown and the NPA_REVOKE cannot be sent (ENOSPC)
    REQUIRE(w.call(w.d(1).gem_close(1, g)) == Errno::Ok);
    w.run();
    CHECK(w.d(1).messages_sent(MsgType::NpaRevoke) == 0);
    CHECK(counter(w.d(1), "releases_missing") == 0);
    const Time revoke_time =
        Time::ps(static_cast<std::int64_t>(w.d(1).revoke_time().histogram().max()));
    if (b4)
      CHECK(revoke_time >= Time::ms(5000));
    else
      CHECK(revoke_time < Time::ms(1));
  }
}

TEST_CASE("import: B5 reintroduced, a repeated import with the wrong hi gets the buffer",
          "[driver][import][bugs]") {
  for (bool b5 : {false, true}) {
    INFO("B5 " << b5);
    World w(2, NpaAddrMode::SourceAliasing, 1, with_bug(b5, "B5"));
    UalinkHandle h = w.exported(1);
    REQUIRE(w.import(0, h).ok());
    UalinkHandle wrong_hi = h;
    wrong_hi.hi ^= 1;
    const auto reqs = w.d(0).messages_sent(MsgType::NpaReq);
    auto r = w.import(0, wrong_hi);
    CHECK(r.err == (b5 ? Errno::Ok : Errno::Inval));
    CHECK(counter(w.d(0), "imports_repeated") == (b5 ? 1u : 0u));
    CHECK(w.d(0).messages_sent(MsgType::NpaReq) == reqs);  // answered from the table
  }
}

TEST_CASE(
    "import: B5 reintroduced, an unsolicited NPA_FAIL overwrites the reason of a READY import, "
    "which stands",
    "[driver][import][bugs]") {
  // Source-identification. GPU 1 maps each range for 256 us (1 us a PTE) before it answers.
  // GPU 0's import is signalled while it waits (ERESTARTSYS) and asked again: the answer to the
  // first NPA_REQ, NPA_RSP, is taken by the second import, and the answer to the second,
  // NPA_FAIL DUPLICATE (GPU 0 has its range already), comes after it, unsolicited.
  for (bool b5 : {false, true}) {
    INFO("B5 " << b5);
    DriverConfig cfg = with_bug(b5, "B5");
    cfg.pte_update_latency = Time::us(1);
    World w(2, NpaAddrMode::SourceIdentification, 1, cfg);
    UalinkHandle h = w.exported(1);
    std::optional<Result<Fd>> first, second;
    w.start(w.d(0).import_handle(1, h), first);
    w.step(Time::us(100));
    w.d(0).signal(1);
    w.step(Time::us(1));
    REQUIRE(first);
    CHECK(first->err == Errno::RestartSys);
    w.start(w.d(0).import_handle(1, h), second);
    w.run();
    REQUIRE(second);
    CHECK(second->ok());
    CHECK(w.d(1).messages_sent(MsgType::NpaRsp) == 1);
    CHECK(w.d(1).messages_sent(MsgType::NpaFail) == 1);
    CHECK(counter(w.d(0), "unsolicited") == 1);
    CHECK(w.d(0).import_state(h) == ImportState::Ready);
    if (b5)
      CHECK(w.d(0).import_failure(h) == FailReason::Duplicate);
    else
      CHECK_FALSE(w.d(0).import_failure(h));
    CHECK(w.env(0).violations.empty());
  }
}

TEST_CASE(
    "import: B5 reintroduced, an unsolicited NPA_RSP taken while the import makes its buffer "
    "moves the buffer to the NPA range it names",
    "[driver][import][bugs]") {
  for (bool b5 : {false, true}) {
    INFO("B5 " << b5);
    DriverConfig cfg = with_bug(b5, "B5");
    cfg.alloc_latency = Time::us(20);  // making the NPA buffer takes 20 us
    World w(2, NpaAddrMode::SourceAliasing, 1, cfg);
    UalinkHandle h = w.exported(1);
    std::optional<Result<Fd>> r;
    w.start(w.d(0).import_handle(1, h), r);
    while (w.d(0).import_state(h) != ImportState::Pending && w.now() < Time::ms(1))
      w.step(Time::ns(100));
    REQUIRE(w.d(0).import_state(h) == ImportState::Pending);  // answered, buffer being made
    Message rsp;  // an NPA_RSP GPU 1 never sent for this import: another range
    rsp.type = MsgType::NpaRsp;
    rsp.handle = h;
    rsp.npa_page = 0x900;
    rsp.size_pages = 256;
    w.d(0).on_interrupt(1, encode(rsp));
    w.run();
    REQUIRE(r);
    REQUIRE(r->ok());
    CHECK(counter(w.d(0), "unsolicited") == 1);
    auto g = w.call(w.d(0).prime_fd_to_handle(1, r->value));
    REQUIRE(g.ok());
    REQUIRE(w.call(w.d(0).gem_va_map(1, g.value, kVa)) == Errno::Ok);
    const std::uint64_t granted = (1ull << kNpaWindowPageBits) | 0x800;  // GPU 1's range
    CHECK(w.env(0).gpuvm.at({1, kVa >> kPageShift}).frame ==
          (b5 ? (1ull << kNpaWindowPageBits) | 0x900 : granted));
  }
}

TEST_CASE(
    "revoke: an NPA_REVOKE before the import is READY ends the import and is released at "
    "once, but with B5 reintroduced it is a kernel oops and the importer is reset after 5 s",
    "[driver][revoke][bugs]") {
  for (bool b5 : {false, true}) {
    INFO("B5 " << b5);
    DriverConfig cfg = with_bug(b5, "B5");
    cfg.alloc_latency = Time::us(50);  // making the NPA buffer takes 50 us
    World w(2, NpaAddrMode::SourceAliasing, 1, cfg);
    GemHandle g;
    UalinkHandle h = w.exported(1, 1 << 20, 1, &g);
    std::optional<Result<Fd>> r;
    w.start(w.d(0).import_handle(1, h), r);
    while (w.d(1).importer_count(h) == 0 && w.now() < Time::ms(1))  // until NPA_RSP went out
      w.step(Time::ns(100));
    REQUIRE(w.d(1).importer_count(h) == 1);
    std::optional<Errno> closed;
    w.start(w.d(1).gem_close(1, g), closed);  // GPU 1 revokes at once
    w.run();
    REQUIRE(r);
    REQUIRE(closed);
    CHECK(w.d(1).messages_sent(MsgType::NpaRevoke) == 1);
    const Time revoke_time =
        Time::ps(static_cast<std::int64_t>(w.d(1).revoke_time().histogram().max()));
    if (b5) {
      REQUIRE(w.env(0).violations.size() == 1);
      CHECK_THAT(w.env(0).violations[0],
                 Catch::Contains("gpu0: kernel oops") && Catch::Contains("before it was READY"));
      CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 0);
      CHECK(r->ok());  // the import went on and made a buffer for a revoked export
      CHECK(w.d(0).import_state(h) == ImportState::Ready);
      CHECK(revoke_time >= Time::ms(5000));
      CHECK(counter(w.d(1), "releases_missing") == 1);
      CHECK(w.d(1).connection(0) == ConnState::NotReady);
    } else {
      CHECK(w.env(0).violations.empty());
      CHECK(r->err == Errno::Inval);
      CHECK(w.d(0).import_state(h) == ImportState::Teardown);
      CHECK(w.d(0).messages_sent(MsgType::NpaRelease) == 1);
      CHECK(w.d(0).holdings().buffers == 0);  // no NPA buffer was made
      CHECK(revoke_time < Time::us(100));
      CHECK(counter(w.d(1), "releases_missing") == 0);
      CHECK(w.d(1).connection(0) == ConnState::Established);
    }
    CHECK(w.env(1).violations.empty());
    CHECK(w.d(1).holdings().buffers == 0);
    CHECK(w.d(1).holdings().pins == 0);
  }
}

TEST_CASE(
    "connections: B7 reintroduced, a message handler's setup() blocks the IRQ worker until "
    "its timeout, and the HELLO_ACK it waits for waits behind it",
    "[driver][connection][bugs]") {
  // GPU 1 restarts; GPU 0, still ESTABLISHED, asks it for a buffer. GPU 1 drops the NPA_REQ
  // and says HELLO (setup() from its IRQ worker); GPU 0 resets its side on that HELLO (its
  // import in flight: EINVAL) and answers HELLO_ACK.
  for (bool b7 : {false, true}) {
    INFO("B7 " << b7);
    World w(2, NpaAddrMode::SourceAliasing, 1, with_bug(b7, "B7"));
    REQUIRE(w.import(0, w.exported(1)).ok());
    w.d(1).device_reset();
    UalinkHandle h = w.exported(1);
    const Time t0 = w.now();
    std::optional<Result<Fd>> first, retry;
    w.start(w.d(0).import_handle(1, h), first);
    w.step(Time::ms(1));
    REQUIRE(first);
    CHECK(first->err == Errno::Inval);
    CHECK(w.d(0).connection(1) == ConnState::Established);
    CHECK(w.d(1).messages_sent(MsgType::Hello) == 1);
    if (b7) {
      // GPU 1's worker still waits in setup() for the HELLO_ACK that is queued behind it.
      CHECK(w.d(1).connection(0) == ConnState::InProgress);
      CHECK(counter(w.d(1), "received.HELLO_ACK") == 0);
    } else {
      CHECK(w.d(1).connection(0) == ConnState::Established);
      CHECK(counter(w.d(1), "received.HELLO_ACK") == 1);
    }
    // The retry: served at once, or, with B7, its NPA_REQ waits too; when the worker gives up
    // (5 s after it began), the ACK finds the connection NOT_READY and is ignored, and the
    // NPA_REQ is dropped for another HELLO, which resets GPU 0's side again: EINVAL.
    const Time t1 = w.now();
    w.start(w.d(0).import_handle(1, h), retry);
    Time retry_ended;
    while (!retry && w.now() - t1 < Time::ms(20'000)) {
      w.step(Time::us(100));
      retry_ended = w.now();
    }
    REQUIRE(retry);
    if (b7) {
      CHECK(retry->err == Errno::Inval);
      CHECK(retry_ended - t0 >= Time::ms(5000));
      CHECK(retry_ended - t0 < Time::ms(5001));
      CHECK(w.d(1).messages_sent(MsgType::Hello) == 2);
      w.run();
      // Each of GPU 1's setups timed out: it is NOT_READY while GPU 0 is ESTABLISHED.
      CHECK(w.d(1).connection(0) == ConnState::NotReady);
      CHECK(w.d(0).connection(1) == ConnState::Established);
      CHECK(counter(w.d(1), "received.HELLO_ACK") == 2);
    } else {
      CHECK(retry->ok());
      CHECK(retry_ended - t1 < Time::ms(1));
      CHECK(w.d(1).messages_sent(MsgType::Hello) == 1);
    }
  }
}

TEST_CASE(
    "export: two concurrent exports of one buffer get one handle, but with B8 reintroduced "
    "two, and the first is never revoked",
    "[driver][export][bugs]") {
  for (bool b8 : {false, true}) {
    INFO("B8 " << b8);
    World w(2, NpaAddrMode::SourceAliasing, 1, with_bug(b8, "B8"));
    GemHandle g = w.buffer(0);
    std::optional<Result<UalinkHandle>> a, b;  // two threads of process 1, at the same time
    w.start(w.d(0).export_handle(1, g), a);
    w.start(w.d(0).export_handle(1, g), b);
    w.run();
    REQUIRE(a);
    REQUIRE(b);
    REQUIRE(a->ok());
    REQUIRE(b->ok());
    CHECK((a->value == b->value) == !b8);
    CHECK(w.d(0).exports() == (b8 ? 2u : 1u));
    CHECK(counter(w.d(0), "exports") == (b8 ? 2u : 1u));
    CHECK(counter(w.d(0), "exports_repeated") == (b8 ? 0u : 1u));
    // GPU 1 imports the first handle; then the buffer's only GEM handle is closed.
    REQUIRE(w.import(1, a->value).ok());
    REQUIRE(w.call(w.d(0).gem_close(1, g)) == Errno::Ok);
    w.run();
    if (b8) {
      // Only the buffer's last handle, the second, was revoked: GPU 1 keeps the first, still
      // mapped and pinned at GPU 0, and the buffer outlives its process.
      CHECK(w.d(0).messages_sent(MsgType::NpaRevoke) == 0);
      CHECK(w.d(0).exports() == 1);
      CHECK(w.d(1).import_state(a->value) == ImportState::Ready);
      CHECK(w.env(0).npa.size() == 256);
      CHECK(w.d(0).holdings().pins == 1);
    } else {
      CHECK(w.d(0).messages_sent(MsgType::NpaRevoke) == 1);
      CHECK(w.d(0).exports() == 0);
      CHECK(w.d(1).import_state(a->value) == ImportState::Teardown);
      CHECK(w.env(0).npa.empty());
      CHECK(w.d(0).holdings().pins == 0);
    }
    w.call(w.d(0).process_exit(1));
    w.run();
    const Holdings held = w.d(0).holdings();  // what the teardown check reads
    CHECK(held.buffers == (b8 ? 1u : 0u));
    CHECK(held.exports == (b8 ? 1u : 0u));
  }
}

TEST_CASE(
    "connections: B1 reintroduced, an import from a restarted exporter survives its HELLO, "
    "reaches the buffer the exporter maps there next, and is reported",
    "[driver][connection][bugs]") {
  for (bool b1 : {false, true}) {
    INFO("B1 " << b1);
    World w(3, NpaAddrMode::SourceAliasing, 1, with_bug(b1, "B1"));
    UalinkHandle h = w.exported(1);
    w.import_and_map(0, h, kVa);
    const std::uint64_t npa = w.env(0).gpuvm.at({1, kVa >> kPageShift}).frame;
    w.d(1).device_reset();
    // GPU 1 comes back and imports from GPU 0: its HELLO tells GPU 0 it restarted.
    REQUIRE(w.import(1, w.exported(0)).ok());
    // GPU 1 exports a new buffer, which GPU 2 imports: it gets GPU 1's first range again.
    UalinkHandle fresh = w.exported(1);
    REQUIRE(w.import(2, fresh).ok());
    REQUIRE(w.env(1).npa.count(npa & kNpaWindowPageMask) == 1);
    CHECK(w.env(1).npa.at(npa & kNpaWindowPageMask).tag == fresh.lo);
    if (b1) {
      REQUIRE(w.env(0).violations.size() == 1);
      CHECK_THAT(w.env(0).violations[0],
                 Catch::Contains(fmt::format("gpu0: import {:016x} from gpu1 outlived its "
                                             "connection: made at generation 1",
                                             h.lo)) &&
                     Catch::Contains("at generation 2 now"));
      // The import stands, and GPU 0's mapping of it now reaches GPU 1's new buffer.
      CHECK(w.d(0).import_state(h) == ImportState::Ready);
      CHECK(w.env(0).gpuvm.at({1, kVa >> kPageShift}).frame == npa);
    } else {
      CHECK(w.env(0).violations.empty());
      CHECK(w.d(0).import_state(h) == ImportState::Teardown);
      CHECK(w.env(0).gpuvm.count({1, kVa >> kPageShift}) == 0);
    }
    // After its process exits, GPU 0 still holds the import (what the teardown check reads)
    // only with B1.
    w.call(w.d(0).process_exit(1));
    w.run();
    CHECK(w.d(0).holdings().imports == (b1 ? 1u : 0u));
  }
}

TEST_CASE(
    "export: a pin or a mapping that fails on the exporter answers NPA_FAIL with reason ERROR, "
    "and the importer's call fails with EINVAL",
    "[driver][import][faults]") {
  for (FailPoint point : {FailPoint::Pin, FailPoint::Map}) {
    INFO((point == FailPoint::Pin ? "pin" : "map"));
    World w(2);
    const UalinkHandle h = w.exported(1);
    w.d(1).fail_next(point, 1);
    CHECK(w.import(0, h).err == Errno::Inval);
    // The exporter's last message to GPU 0: NPA_FAIL, ERROR, for this handle.
    REQUIRE_FALSE(w.env(1).messages.empty());
    const auto& [to, dw] = w.env(1).messages.back();
    CHECK(to == 0);
    Message m;
    REQUIRE(decode(dw, 1, 0, m));
    CHECK(m.type == MsgType::NpaFail);
    CHECK(m.reason == FailReason::Error);
    CHECK(m.handle.lo == h.lo);
    // Everything undone: nothing pinned, and the next import is granted.
    CHECK(w.env(1).pinned == 0);
    CHECK(w.import(0, h).ok());
    CHECK(w.env(1).pinned > 0);
  }
}

TEST_CASE(
    "import: B5 reintroduced, an NPA_FAIL handled before the woken importer runs fails a "
    "granted import (the harmful form), with the fix it stands",
    "[driver][import][bugs]") {
  // As above, with the importer's thread slow to run once woken (wake_latency 10 us): the
  // NPA_RSP wakes the second import, and the unsolicited NPA_FAIL DUPLICATE (2 us later) is
  // handled by the interrupt worker before that import looks at its answer.
  for (bool b5 : {false, true}) {
    INFO("B5 " << b5);
    DriverConfig cfg = with_bug(b5, "B5");
    cfg.pte_update_latency = Time::us(1);
    cfg.wake_latency = Time::us(10);
    World w(2, NpaAddrMode::SourceIdentification, 1, cfg);
    UalinkHandle h = w.exported(1);
    std::optional<Result<Fd>> first, second;
    w.start(w.d(0).import_handle(1, h), first);
    w.step(Time::us(100));
    w.d(0).signal(1);
    w.step(Time::us(20));
    REQUIRE(first);
    CHECK(first->err == Errno::RestartSys);
    w.start(w.d(0).import_handle(1, h), second);
    w.run();
    REQUIRE(second);
    CHECK(w.d(1).messages_sent(MsgType::NpaRsp) == 1);
    CHECK(w.d(1).messages_sent(MsgType::NpaFail) == 1);
    CHECK(counter(w.d(1), "pins") == 1);  // the exporter granted it either way
    if (b5) {
      // The overwritten reason fails an import the exporter granted: EINVAL, and the grant
      // (a pin and a range) stays at the exporter until a revoke finds it.
      CHECK(second->err == Errno::Inval);
    } else {
      CHECK(second->ok());
      CHECK(w.d(0).import_state(h) == ImportState::Ready);
    }
  }
}
