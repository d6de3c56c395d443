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
