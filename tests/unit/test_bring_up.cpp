// Bring-up (reference §1) in the plain-C++ world: the pPod and vPod commits' checks, activate
// (READY after the firmware's load, polled every firmware_poll_interval; ETIMEDOUT with
// everything undone), deactivate (connections reset without telling peers).
#include <catch2/catch.hpp>

#include "tests/unit/driver_world.hpp"

using namespace podsim;
using namespace podsim::driver;
using podsim::test::World;

namespace {
VpodInfo vpod(std::initializer_list<AccelId> members, std::uint32_t id = 0,
              std::uint32_t size = 0) {
  VpodInfo v;
  v.id = id;
  v.size = size;
  v.members.assign(kMaxAccels, false);
  for (AccelId m : members)
    v.members[m] = true;
  return v;
}
}  // namespace

TEST_CASE("bring-up: the pPod commit configures only a pPod that holds this accelerator",
          "[driver][bring_up]") {
  World w(2);
  Driver& d = w.d(1);
  d.unconfigure();
  CHECK(d.accel_state() == AccelState::Unconfigured);
  // The call succeeds; the state says whether the pPod was good.
  for (std::uint32_t bad : {0u, 1u, 257u}) {  // empty, too small for ID 1, above accel_max
    INFO(bad);
    CHECK(w.call(d.ppod_commit(PpodInfo{1, bad})) == Errno::Ok);
    CHECK(d.accel_state() == AccelState::Unconfigured);
  }
  CHECK(w.call(d.ppod_commit(PpodInfo{0, 2})) == Errno::Ok);  // another accelerator's ID
  CHECK(d.accel_state() == AccelState::Unconfigured);
  CHECK(w.call(d.ppod_commit(PpodInfo{1, 2})) == Errno::Ok);
  CHECK(d.accel_state() == AccelState::Configured);
}

TEST_CASE("bring-up: the vPod commit's checks are EINVAL, and activation needs a vPod",
          "[driver][bring_up]") {
  World w(4);
  Driver& d = w.d(1);
  d.unconfigure();
  CHECK(w.call(d.vpod_commit(vpod({0, 1}))) == Errno::Inval);  // not CONFIGURED
  CHECK(w.call(d.activate()) == Errno::Inval);
  REQUIRE(w.call(d.ppod_commit(PpodInfo{1, 4})) == Errno::Ok);
  CHECK(w.call(d.activate()) == Errno::Inval);                          // no vPod yet
  CHECK(w.call(d.vpod_commit(vpod({0, 1}, 256))) == Errno::Inval);      // id >= 256
  CHECK(w.call(d.vpod_commit(vpod({0, 1, 2, 3, 4}))) == Errno::Inval);  // larger than the pPod
  CHECK(w.call(d.vpod_commit(vpod({0, 1}, 0, 3))) == Errno::Inval);     // size != members
  CHECK(w.call(d.vpod_commit(vpod({0, 2}))) == Errno::Inval);           // not a member itself
  CHECK(d.accel_state() == AccelState::Configured);
  CHECK(w.call(d.vpod_commit(vpod({0, 1}))) == Errno::Ok);
}

TEST_CASE(
    "bring-up: activation enables NPA, maps the rings, loads the firmware and polls it READY, "
    "and until then UALink is not supported",
    "[driver][bring_up]") {
  World w(2);
  Driver& d = w.d(0);
  d.unconfigure();
  w.env(0).npa_enabled = w.env(0).rings_mapped = w.env(0).firmware_loaded = false;
  GemHandle g = w.buffer(0);
  CHECK(w.call(d.export_handle(1, g)).err == Errno::OpNotSupp);
  REQUIRE(w.call(d.ppod_commit(PpodInfo{0, 2})) == Errno::Ok);
  REQUIRE(w.call(d.vpod_commit(vpod({0, 1}))) == Errno::Ok);
  const Time t0 = w.now();
  REQUIRE(w.call(d.activate()) == Errno::Ok);
  CHECK(d.accel_state() == AccelState::Ready);
  CHECK(w.env(0).npa_enabled);
  CHECK(w.env(0).rings_mapped);
  CHECK(w.env(0).firmware_ready());
  // ioctl, PSP, 16 ring PTEs, then the firmware (100 us) seen at the second look, 1 ms on.
  const DriverConfig c;
  CHECK(w.now() - t0 ==
        c.ioctl_latency + c.psp_latency + c.pte_update_latency * 16 + c.firmware_poll_interval);
  CHECK(d.activate_time().histogram().count() == 1);
  CHECK(w.call(d.export_handle(1, g)).ok());
  CHECK(w.call(d.activate()) == Errno::Ok);  // READY already: nothing to do
  CHECK(d.activate_time().histogram().count() == 1);
}

TEST_CASE("bring-up: firmware that never reports READY fails activation with ETIMEDOUT, undone",
          "[driver][bring_up]") {
  World w(2);
  Driver& d = w.d(0);
  d.unconfigure();
  w.env(0).firmware_never_ready = true;
  REQUIRE(w.call(d.ppod_commit(PpodInfo{0, 2})) == Errno::Ok);
  REQUIRE(w.call(d.vpod_commit(vpod({0, 1}))) == Errno::Ok);
  const Time t0 = w.now();
  CHECK(w.call(d.activate()) == Errno::TimedOut);
  const DriverConfig c;
  // firmware_poll_limit looks, a sleep between each two.
  CHECK(w.now() - t0 >= c.firmware_poll_interval * (c.firmware_poll_limit - 1));
  CHECK(w.now() - t0 < c.firmware_poll_interval * c.firmware_poll_limit);
  CHECK(d.accel_state() == AccelState::Configured);
  CHECK_FALSE(w.env(0).npa_enabled);
  CHECK_FALSE(w.env(0).rings_mapped);
  CHECK_FALSE(w.env(0).firmware_loaded);
}

TEST_CASE(
    "bring-up: deactivation resets every connection without a message, the importer keeps "
    "its import, and the exporter is CONFIGURED",
    "[driver][bring_up]") {
  World w(2);
  const UalinkHandle h = w.exported(0);
  REQUIRE(w.import(1, h).ok());
  REQUIRE(w.d(0).connection(1) == ConnState::Established);
  const std::uint64_t sent = w.env(0).sent;
  CHECK(w.call(w.d(0).deactivate()) == Errno::Ok);
  CHECK(w.d(0).accel_state() == AccelState::Configured);
  CHECK(w.d(0).connection(1) == ConnState::NotReady);
  CHECK(w.env(0).sent == sent);          // peers are not told
  CHECK(w.d(0).importer_count(h) == 0);  // its importer dropped (unpinned, range freed)
  CHECK_FALSE(w.env(0).npa_enabled);
  CHECK_FALSE(w.env(0).rings_mapped);
  CHECK(w.d(1).imports() == 1);                        // the importer never heard
  CHECK(w.call(w.d(0).deactivate()) == Errno::Inval);  // below READY
  // Activated again, it exports again.
  CHECK(w.call(w.d(0).activate()) == Errno::Ok);
  CHECK(w.d(0).accel_state() == AccelState::Ready);
}

// ---- a host's local accelerators (reference §1; driver_model/host.hpp) ----------------------

namespace {
// Accelerator i of `w` is down: CONFIGURED, NPA translation off, rings unmapped, no firmware.
void check_down(World& w, int i) {
  INFO("accelerator " << i);
  CHECK(w.d(i).accel_state() == AccelState::Configured);
  CHECK_FALSE(w.env(i).npa_enabled);
  CHECK_FALSE(w.env(i).rings_mapped);
  CHECK_FALSE(w.env(i).firmware_loaded);
}

// Drivers 0..n-1 of `w` unconfigured, with the pPod of `ppod` accelerators committed.
void configured(World& w, int n, std::uint32_t ppod) {
  for (int i = 0; i < n; ++i) {
    w.d(i).unconfigure();
    w.env(i).npa_enabled = w.env(i).rings_mapped = w.env(i).firmware_loaded = false;
    REQUIRE(w.call(w.d(i).ppod_commit(PpodInfo{static_cast<AccelId>(i), ppod})) == Errno::Ok);
  }
}
}  // namespace

TEST_CASE(
    "bring-up: a host's local accelerators are activated together, one after the other, and "
    "deactivated together, and a call on one of them waits for the one under way",
    "[driver][bring_up][host]") {
  Host host;  // outlives the drivers
  World w(4);
  for (int i = 0; i < 3; ++i)
    w.d(i).join(host);  // GPU 3 is on a host of its own
  configured(w, 4, 4);
  for (int i : {0, 1, 3})
    REQUIRE(w.call(w.d(i).vpod_commit(vpod({0, 1, 3}))) == Errno::Ok);
  REQUIRE(w.call(w.d(2).vpod_commit(vpod({2}, 1))) == Errno::Ok);  // another vPod: not local
  const Time t0 = w.now();
  std::optional<Errno> first, second;
  w.start(w.d(0).activate(), first);
  w.start(w.d(1).activate(), second);  // at the same time: it waits for the host's lock
  w.run();
  REQUIRE(first == Errno::Ok);
  REQUIRE(second == Errno::Ok);
  // The ioctl, then for each of the two in turn: the PSP and 16 ring PTEs, and its firmware
  // load; each firmware is not READY at its first look, and is at the next, 1 ms on. The
  // calls end when the second is READY.
  const DriverConfig c;
  const Time each = c.psp_latency + c.pte_update_latency * 16;
  CHECK(w.now() - t0 == c.ioctl_latency + each * 2 + c.firmware_poll_interval);
  for (int i : {0, 1}) {
    INFO("accelerator " << i);
    const Time activation = c.ioctl_latency + each * (i + 1) + c.firmware_poll_interval;
    CHECK(w.d(i).accel_state() == AccelState::Ready);
    CHECK(w.env(i).npa_enabled);
    CHECK(w.env(i).rings_mapped);
    CHECK(w.env(i).firmware_ready());
    CHECK(w.d(i).activate_time().histogram().count() == 1);  // once: the second call found it READY
    CHECK(w.d(i).activate_time().histogram().mean() ==
          Approx(activation.as_ps()));  // from the call
  }
  CHECK(w.d(2).accel_state() == AccelState::Configured);  // the host's, in another vPod
  CHECK(w.d(3).accel_state() == AccelState::Configured);  // in the vPod, on another host
  CHECK_FALSE(w.env(2).npa_enabled);
  CHECK_FALSE(w.env(3).npa_enabled);
  // Deactivating one deactivates both.
  CHECK(w.call(w.d(1).deactivate()) == Errno::Ok);
  for (int i : {0, 1})
    check_down(w, i);
  // Accelerator 2 comes up on its own.
  CHECK(w.call(w.d(2).activate()) == Errno::Ok);
  CHECK(w.d(2).accel_state() == AccelState::Ready);
  CHECK(w.d(0).accel_state() == AccelState::Configured);
}

TEST_CASE(
    "bring-up: one local accelerator's firmware never READY fails the host's activation with "
    "ETIMEDOUT, every one undone",
    "[driver][bring_up][host]") {
  Host host;
  World w(2);
  w.d(0).join(host);
  w.d(1).join(host);
  configured(w, 2, 2);
  for (int i : {0, 1})
    REQUIRE(w.call(w.d(i).vpod_commit(vpod({0, 1}))) == Errno::Ok);
  w.env(1).firmware_never_ready = true;
  CHECK(w.call(w.d(0).activate()) == Errno::TimedOut);
  for (int i : {0, 1})
    check_down(w, i);
}

TEST_CASE(
    "bring-up: local accelerators must match on sizes and members (EINVAL), one in another "
    "vPod is not local",
    "[driver][bring_up][host]") {
  Host host;
  World w(4);
  for (int i = 0; i < 3; ++i)
    w.d(i).join(host);
  configured(w, 3, 4);
  REQUIRE(w.call(w.d(0).vpod_commit(vpod({0, 1, 2}))) == Errno::Ok);
  CHECK(w.call(w.d(1).vpod_commit(vpod({0, 1, 3}))) == Errno::Inval);     // other members
  CHECK(w.call(w.d(1).vpod_commit(vpod({0, 1}))) == Errno::Inval);        // and size
  CHECK(w.call(w.d(1).vpod_commit(vpod({0, 1, 2}, 0, 3))) == Errno::Ok);  // the same
  REQUIRE(w.call(w.d(2).ppod_commit(PpodInfo{2, 3})) == Errno::Ok);
  CHECK(w.call(w.d(2).vpod_commit(vpod({0, 1, 2}))) == Errno::Inval);  // another pPod size
  CHECK(w.call(w.d(2).vpod_commit(vpod({2}, 1))) == Errno::Ok);        // another vPod: alone
  // A host holds at most 8.
  Host full;
  World many(9);
  for (int i = 0; i < 8; ++i)
    many.d(i).join(full);
  CHECK_THROWS_AS(many.d(8).join(full), std::invalid_argument);
}

TEST_CASE(
    "bring-up: local accelerators' IDs must be unique (EINVAL), and with B8 put back the "
    "check compares the wrong element and passes a duplicate",
    "[driver][bring_up][host][bugs]") {
  for (const bool b8 : {false, true}) {
    INFO("B8 put back: " << b8);
    DriverConfig c;
    if (b8) c.reintroduce_bugs = {"B8"};
    Host host;
    // Two worlds: two drivers that both think they are accelerator 1, on one host.
    World a(2, NpaAddrMode::SourceAliasing, 1, c), b(2, NpaAddrMode::SourceAliasing, 2, c);
    a.d(1).join(host);
    b.d(1).join(host);
    configured(a, 2, 2);
    configured(b, 2, 2);
    REQUIRE(a.call(a.d(1).vpod_commit(vpod({0, 1}))) == Errno::Ok);
    CHECK(b.call(b.d(1).vpod_commit(vpod({0, 1}))) == (b8 ? Errno::Ok : Errno::Inval));
  }
}
