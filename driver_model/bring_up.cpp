// Bring-up (reference §1): the pPod and vPod commits, activate and deactivate.
#include <algorithm>

#include "driver_model/driver.hpp"

namespace podsim::driver {

void Driver::unconfigure() {
  state_ = AccelState::Unconfigured;
  ppod_.reset();
  vpod_committed_ = false;
}

// Bring-up calls are serialized (the driver holds a lock across each): one waits for the one
// under way.
Task<Errno> Driver::ppod_commit(PpodInfo p) {
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock_.lock(env_);
  const Errno e = co_await ppod_commit_locked(p);
  bring_up_lock_.unlock();
  co_return e;
}

Task<Errno> Driver::ppod_commit_locked(PpodInfo p) {
  if (state_ >= AccelState::Ready) co_await deactivate_now();
  const bool ok =
      p.size >= 1 && p.size <= cfg_.accel_max && p.accel_id < p.size && p.accel_id == self_;
  ppod_ = ok ? std::optional<PpodInfo>(p) : std::nullopt;
  vpod_committed_ = false;
  state_ = ok ? AccelState::Configured : AccelState::Unconfigured;
  co_return Errno::Ok;
}

Task<Errno> Driver::vpod_commit(VpodInfo v) {
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock_.lock(env_);
  const Errno e = commit_vpod(std::move(v));
  bring_up_lock_.unlock();
  co_return e;
}

Errno Driver::commit_vpod(VpodInfo v) {
  if (state_ < AccelState::Configured || !ppod_) return Errno::Inval;
  const auto members =
      static_cast<std::uint32_t>(std::count(v.members.begin(), v.members.end(), true));
  const std::uint32_t size = v.size != 0 ? v.size : members;
  if (v.id >= 256 || size < 1 || size > ppod_->size || members != size || !v.contains(self_))
    return Errno::Inval;
  v.size = size;
  // While READY the snapshot changes the vPod without resetting connections (it leaves that
  // for later), and so does podsim.
  vpod_ = std::move(v);
  vpod_committed_ = true;
  return Errno::Ok;
}

Task<Errno> Driver::activate() {
  const Time t0 = env_.now();
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock_.lock(env_);
  const Errno e = co_await activate_locked(t0);
  bring_up_lock_.unlock();
  co_return e;
}

Task<Errno> Driver::activate_locked(Time t0) {
  if (state_ >= AccelState::Ready) co_return Errno::Ok;
  if (state_ < AccelState::Configured || !vpod_committed_) co_return Errno::Inval;
  // The PSP enables incoming NPA translation; the NPA VM is made and programmed.
  co_await sleep(cfg_.psp_latency);
  env_.npa_enable(true);
  // The tables start empty: every connection NOT_READY (§1 step 3).
  drop_connections();
  // The rings' receive pages, PTE by PTE; the firmware loads their metadata; wait for READY.
  const std::uint64_t ptes = env_.rings_map(true);
  co_await sleep(Time::ps(cfg_.pte_update_latency.as_ps() * static_cast<std::int64_t>(ptes)));
  env_.firmware_load();
  std::uint32_t looks = 0;
  while (!env_.firmware_ready()) {
    if (++looks >= cfg_.firmware_poll_limit) {
      env_.firmware_halt();
      env_.rings_map(false);
      env_.npa_enable(false);
      co_return Errno::TimedOut;  // a failing step leaves the state as it was
    }
    co_await sleep(cfg_.firmware_poll_interval);
  }
  state_ = AccelState::Ready;
  activate_time_.record(env_.now() - t0);
  env_.note_call("activate", t0, "{}");
  co_return Errno::Ok;
}

Task<Errno> Driver::deactivate() {
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock_.lock(env_);
  const bool ready = state_ >= AccelState::Ready;
  if (ready) co_await deactivate_now();
  bring_up_lock_.unlock();
  co_return ready ? Errno::Ok : Errno::Inval;
}

void Driver::drop_connections() {
  for (AccelId peer = 0; peer < cfg_.accel_max; ++peer)
    if (conns_.state(peer) == ConnState::InProgress || conns_.state(peer) == ConnState::Pending)
      conns_.drop(peer);  // its waiter (a setup) wakes and finds it gone
}

Task<void> Driver::deactivate_now() {
  // The state goes first: calls and messages from here on find UALink inactive (the IRQ
  // worker drops what it takes); the firmware stops taking commands; handshakes under way end.
  state_ = AccelState::Configured;
  env_.firmware_halt();
  drop_connections();
  for (AccelId peer = 0; peer < cfg_.accel_max; ++peer)
    if (conns_.established(peer))
      co_await reset_connection(peer, ConnState::NotReady, conns_.generation(peer));
  co_await sleep(cfg_.psp_latency);
  env_.npa_enable(false);
  env_.rings_map(false);
}

}  // namespace podsim::driver
