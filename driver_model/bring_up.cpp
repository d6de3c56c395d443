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
  if (state_ >= AccelState::Ready) co_await deactivate_host();  // with its local accelerators
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

// One accelerator's part of a bring-up call, run as that accelerator's own task (in its
// runner): a reset of it abandons the part with everything else it was doing, and a reset of
// the caller leaves the part to finish. The caller waits on `done`.
struct Driver::Part {
  bool loaded = false;          // activation: its firmware is loading (the next may begin)
  bool finished = false;        // the part ended, or was abandoned with its accelerator's tasks
  Errno result = Errno::NoDev;  // NoDev: abandoned
  WaitQueue done;
};
namespace {
// Marks a part finished however its frame ends (returned, or destroyed by a reset).
struct Finish {
  std::shared_ptr<Driver::Part> part;
  ~Finish() {
    part->finished = true;
    part->done.wake_all();
  }
};
}  // namespace

// This accelerator's activation: the PSP enables incoming NPA translation (and the NPA VM is
// made and programmed), the tables start empty (every connection NOT_READY, §1 step 3), the
// rings' receive pages are mapped PTE by PTE, the firmware loads their metadata; then it is
// polled for READY every firmware_poll_interval up to firmware_poll_limit times (ETIMEDOUT,
// everything undone).
Task<void> Driver::activation_part(Time t0, AccelId by, std::shared_ptr<Part> part) {
  Finish finish{part};
  co_await sleep(cfg_.psp_latency);
  if (state_ != AccelState::Configured || !vpod_committed_) co_return;  // changed meanwhile
  env_.npa_enable(true);
  drop_connections();
  const std::uint64_t ptes = env_.rings_map(true);
  co_await sleep(Time::ps(cfg_.pte_update_latency.as_ps() * static_cast<std::int64_t>(ptes)));
  env_.firmware_load();
  part->loaded = true;
  part->done.wake_all();
  std::uint32_t looks = 0;
  while (!env_.firmware_ready()) {
    if (++looks >= cfg_.firmware_poll_limit) {
      undo_activation();
      part->result = Errno::TimedOut;
      co_return;
    }
    co_await sleep(cfg_.firmware_poll_interval);
  }
  state_ = AccelState::Ready;
  activate_time_.record(env_.now() - t0);
  env_.note_call("activate", t0,
                 by == self_ ? std::string("{}") : fmt::format(R"({{"with": {}}})", by));
  part->result = Errno::Ok;
}

void Driver::undo_activation() {
  state_ = AccelState::Configured;
  env_.firmware_halt();
  env_.rings_map(false);
  env_.npa_enable(false);
}

Task<void> Driver::deactivation_part(std::shared_ptr<Part> part) {
  Finish finish{part};
  co_await deactivate_now();
  part->result = Errno::Ok;
}

// This accelerator and every local accelerator CONFIGURED in its vPod come up together: one
// after the other up to its firmware load (one PSP), each then polled for READY on its own;
// the call returns once all are READY. If one fails, those READY are taken back down (the
// step leaves every state as it was). A part abandoned by its accelerator's reset is not
// waited for.
Task<Errno> Driver::activate_locked(Time t0) {
  if (state_ < AccelState::Configured || !vpod_committed_) co_return Errno::Inval;
  std::vector<std::pair<Driver*, std::shared_ptr<Part>>> parts;
  for (Driver* d : local_accels(AccelState::Configured)) {
    if (d->state_ != AccelState::Configured) continue;  // this one, READY already
    auto part = std::make_shared<Part>();
    d->runner_.run(d->activation_part(t0, self_, part));
    while (!part->loaded && !part->finished)
      co_await part->done.wait(env_);
    parts.emplace_back(d, std::move(part));
  }
  for (auto& [d, part] : parts)
    while (!part->finished)
      co_await part->done.wait(env_);
  const bool failed = std::any_of(parts.begin(), parts.end(), [](const auto& dp) {
    return dp.second->result == Errno::TimedOut;
  });
  if (!failed) co_return Errno::Ok;
  for (auto& [d, part] : parts)
    if (part->result == Errno::Ok && d->state_ == AccelState::Ready) d->undo_activation();
  co_return Errno::TimedOut;
}

Task<Errno> Driver::deactivate() {
  co_await sleep(cfg_.ioctl_latency);
  co_await bring_up_lock().lock(env_, this);
  const bool ready = state_ >= AccelState::Ready;
  if (ready) co_await deactivate_host();
  bring_up_lock().unlock();
  co_return ready ? Errno::Ok : Errno::Inval;
}

// This accelerator and its READY local accelerators go down, one after the other, each in
// its own task.
Task<void> Driver::deactivate_host() {
  for (Driver* d : local_accels(AccelState::Ready)) {
    if (d->state_ < AccelState::Ready) continue;  // down already
    auto part = std::make_shared<Part>();
    d->runner_.run(d->deactivation_part(part));
    while (!part->finished)
      co_await part->done.wait(env_);
  }
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
