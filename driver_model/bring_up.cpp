// Bring-up (reference §1): the pPod and vPod commits, activate and deactivate, and a host's
// local accelerators (host.hpp).
#include <algorithm>

#include <fmt/format.h>

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
  co_await bring_up_lock().lock(env_, this);
  const Errno e = co_await ppod_commit_locked(p);
  bring_up_lock().unlock();
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
  co_await bring_up_lock().lock(env_, this);
  const Errno e = commit_vpod(std::move(v));
  bring_up_lock().unlock();
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
  if (const Errno e = check_local_accels(v); e != Errno::Ok) return e;
  // While READY the snapshot changes the vPod without resetting connections (it leaves that
  // for later), and so does podsim.
  vpod_ = std::move(v);
  vpod_committed_ = true;
  return Errno::Ok;
}

Task<Errno> Driver::activate() {
  const Time t0 = env_.now();
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock().lock(env_, this);
  const Errno e = co_await activate_locked(t0);
  bring_up_lock().unlock();
  co_return e;
}

void Driver::join(Host& host) {
  host.add(*this);
  host_ = &host;
}

std::vector<Driver*> Driver::local_accels(AccelState state) {
  std::vector<Driver*> out{this};
  if (host_)
    for (Driver* o : host_->drivers())
      if (o != this && o->state_ == state && o->vpod_committed_ && o->vpod_.id == vpod_.id)
        out.push_back(o);
  std::stable_sort(out.begin(), out.end(),
                   [](const Driver* a, const Driver* b) { return a->self_ < b->self_; });
  return out;
}

Errno Driver::check_local_accels(const VpodInfo& v) const {
  if (!host_) return Errno::Ok;
  for (const Driver* o : host_->drivers()) {
    if (o == this || o->state_ < AccelState::Configured || !o->vpod_committed_ ||
        o->vpod_.id != v.id)
      continue;
    // They must match on sizes, address mode and map.
    if (!o->ppod_ || o->ppod_->size != ppod_->size || o->vpod_.size != v.size ||
        o->mode_ != mode_ || o->vpod_.members != v.members)
      return Errno::Inval;
    // Their IDs must be unique (B8: the check compares the wrong element, and passes).
    if (o->self_ == self_ && !bug(Bug::B8)) return Errno::Inval;
  }
  return Errno::Ok;
}

// This accelerator and its local accelerators come up together, one after the other (one
// PSP): NPA translation, tables, rings, firmware load; then every firmware is polled for
// READY. A local accelerator reset meanwhile (it comes back READY by itself) is left alone.
Task<Errno> Driver::activate_locked(Time t0) {
  if (state_ >= AccelState::Ready) co_return Errno::Ok;
  if (state_ < AccelState::Configured || !vpod_committed_) co_return Errno::Inval;
  struct Member {
    Driver* d;
    std::uint64_t resets;
  };
  std::vector<Member> set;
  for (Driver* d : local_accels(AccelState::Configured))
    set.push_back({d, d->resets_});
  const auto left_alone = [](const Member& m) {
    return m.d->resets_ != m.resets || m.d->state_ != AccelState::Configured;
  };
  for (const Member& m : set) {
    // The PSP enables incoming NPA translation; the NPA VM is made and programmed.
    co_await sleep(cfg_.psp_latency);
    if (left_alone(m)) continue;
    m.d->env_.npa_enable(true);
    // The tables start empty: every connection NOT_READY (§1 step 3).
    m.d->drop_connections();
    // The rings' receive pages, PTE by PTE; the firmware loads their metadata.
    const std::uint64_t ptes = m.d->env_.rings_map(true);
    co_await sleep(Time::ps(cfg_.pte_update_latency.as_ps() * static_cast<std::int64_t>(ptes)));
    if (left_alone(m)) continue;
    m.d->env_.firmware_load();
  }
  std::erase_if(set, left_alone);
  // Wait for every firmware's READY.
  std::uint32_t looks = 0;
  while (!std::all_of(set.begin(), set.end(),
                      [](const Member& m) { return m.d->env_.firmware_ready(); })) {
    if (++looks >= cfg_.firmware_poll_limit) {
      for (const Member& m : set) {  // a failing step leaves every state as it was
        m.d->env_.firmware_halt();
        m.d->env_.rings_map(false);
        m.d->env_.npa_enable(false);
      }
      co_return Errno::TimedOut;
    }
    co_await sleep(cfg_.firmware_poll_interval);
    std::erase_if(set, left_alone);
  }
  for (const Member& m : set) {
    m.d->state_ = AccelState::Ready;
    m.d->activate_time_.record(env_.now() - t0);
    m.d->env_.note_call("activate", t0,
                        m.d == this ? std::string("{}") : fmt::format(R"({{"with": {}}})", self_));
  }
  co_return Errno::Ok;
}

Task<Errno> Driver::deactivate() {
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock().lock(env_, this);
  const bool ready = state_ >= AccelState::Ready;
  if (ready) {
    // With its local accelerators (one after the other; one reset meanwhile is left alone).
    for (Driver* d : local_accels(state_)) {
      if (d != this && d->state_ < AccelState::Ready) continue;
      co_await d->deactivate_now();
    }
  }
  bring_up_lock().unlock();
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
  // A local accelerator's call can be deactivating this one when it is reset: it stops there
  // (the reset brought it back READY).
  const std::uint64_t resets = resets_;
  state_ = AccelState::Configured;
  env_.firmware_halt();
  drop_connections();
  for (AccelId peer = 0; peer < cfg_.accel_max; ++peer)
    if (conns_.established(peer)) {
      co_await reset_connection(peer, ConnState::NotReady, conns_.generation(peer));
      if (resets_ != resets) co_return;
    }
  co_await sleep(cfg_.psp_latency);
  if (resets_ != resets) co_return;
  env_.npa_enable(false);
  env_.rings_map(false);
}

}  // namespace podsim::driver
