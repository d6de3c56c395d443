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

// A bring-up call, or one accelerator's part of a host's activation or deactivation, run as
// a task of its own (the call in the host's runner, a part in its accelerator's): a reset of
// that accelerator abandons a part with everything else it was doing, and leaves a call and
// the other parts to finish. Whoever started it waits on `done`.
struct Driver::Part {
  bool loaded = false;          // activation: its firmware is loading (the next may begin)
  bool finished = false;        // it ended, or was abandoned
  Errno result = Errno::NoDev;  // NoDev: abandoned
  Time ready_at;                // activation: when it was READY
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

Task<Errno> Driver::ppod_commit(PpodInfo p) {
  return bring_up({.call = BringUp::PpodCommit, .t0 = env_.now(), .ppod = p});
}
Task<Errno> Driver::vpod_commit(VpodInfo v) {
  return bring_up({.call = BringUp::VpodCommit, .t0 = env_.now(), .vpod = std::move(v)});
}
Task<Errno> Driver::activate() {
  return bring_up({.call = BringUp::Activate, .t0 = env_.now()});
}
Task<Errno> Driver::deactivate() {
  return bring_up({.call = BringUp::Deactivate, .t0 = env_.now()});
}

// Bring-up calls are serialized (the driver holds a lock across each; one waits for the one
// under way), and each runs as a task of the host's (host.hpp): the caller's reset abandons
// its wait, and the call goes on for the host's other accelerators.
Task<Errno> Driver::bring_up(BringUpArgs a) {
  co_await sleep(cfg_.ioctl_latency);
  auto call = std::make_shared<Part>();
  host_->run(host_call(std::move(a), epoch_, call));
  while (!call->finished)
    co_await call->done.wait(env_);
  co_return call->result;
}

// A call made before a reset of its accelerator is not the fresh driver's: one still waiting
// for the lock does nothing, one under way leaves this accelerator alone from then on.
Task<void> Driver::host_call(BringUpArgs a, std::uint64_t epoch, std::shared_ptr<Part> call) {
  Finish finish{call};
  Mutex& lock = host_->bring_up_lock();
  co_await lock.lock(env_, host_);
  if (epoch_ == epoch) {
    switch (a.call) {
      case BringUp::PpodCommit: call->result = co_await ppod_commit_locked(a.ppod, epoch); break;
      case BringUp::VpodCommit: call->result = commit_vpod(std::move(a.vpod)); break;
      case BringUp::Activate: call->result = co_await activate_locked(a.t0); break;
      case BringUp::Deactivate: {
        const bool ready = state_ >= AccelState::Ready;
        if (ready) co_await deactivate_host();
        call->result = ready ? Errno::Ok : Errno::Inval;
        break;
      }
    }
  }
  lock.unlock();
}

Task<Errno> Driver::ppod_commit_locked(PpodInfo p, std::uint64_t epoch) {
  if (state_ >= AccelState::Ready) co_await deactivate_host();  // with its local accelerators
  if (epoch_ != epoch) co_return Errno::NoDev;  // reset meanwhile: the fresh driver's own
  const bool ok =
      p.size >= 1 && p.size <= cfg_.accel_max && p.accel_id < p.size && p.accel_id == self_;
  ppod_ = ok ? std::optional<PpodInfo>(p) : std::nullopt;
  vpod_committed_ = false;
  state_ = ok ? AccelState::Configured : AccelState::Unconfigured;
  co_return Errno::Ok;
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

void Driver::join(Host& host) {
  host.add(*this);
  host_ = &host;
  own_host_.reset();  // before any call: it has none under way
}

std::vector<Driver*> Driver::local_accels(AccelState state) {
  std::vector<Driver*> out{this};
  for (Driver* o : host_->drivers())
    if (o != this && !o->down_ && o->state_ == state && o->vpod_committed_ &&
        o->vpod_.id == vpod_.id)
      out.push_back(o);
  std::stable_sort(out.begin(), out.end(),
                   [](const Driver* a, const Driver* b) { return a->self_ < b->self_; });
  return out;
}

Errno Driver::check_local_accels(const VpodInfo& v) const {
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
  part->ready_at = env_.now();
  came_back();  // after_reset = announce: connect to the former importers of a deactivation
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
// the call returns once all are READY. If one fails, those READY are taken back down (a
// deactivation: connections made meanwhile are reset), so the call leaves every state as it
// was. An accelerator reset meanwhile is no longer the call's: its part is abandoned, it is
// not waited for, started or taken down, and its time is not recorded.
Task<Errno> Driver::activate_locked(Time t0) {
  if (state_ < AccelState::Configured || !vpod_committed_) co_return Errno::Inval;
  struct Member {
    Driver* d;
    std::uint64_t epoch;
    std::shared_ptr<Part> part;
    bool ours() const { return d->epoch_ == epoch; }
  };
  std::vector<Member> members;
  for (Driver* d : local_accels(AccelState::Configured))
    if (d->state_ == AccelState::Configured) members.push_back({d, d->epoch_, nullptr});
  for (Member& m : members) {
    if (!m.ours() || m.d->state_ != AccelState::Configured) continue;
    m.part = std::make_shared<Part>();
    m.d->runner_.run(m.d->activation_part(t0, self_, m.part));
    while (!m.part->loaded && !m.part->finished)
      co_await m.part->done.wait(env_);
  }
  for (Member& m : members)
    while (m.part && !m.part->finished)
      co_await m.part->done.wait(env_);
  const auto up = [](const Member& m) {
    return m.part && m.part->result == Errno::Ok && m.ours() && m.d->state_ == AccelState::Ready;
  };
  const bool failed = std::any_of(members.begin(), members.end(), [](const Member& m) {
    return m.part && m.part->result == Errno::TimedOut;
  });
  if (!failed) {
    for (const Member& m : members)
      if (up(m)) m.d->activate_time_.record(m.part->ready_at - t0);
    co_return Errno::Ok;
  }
  for (const Member& m : members)
    if (up(m)) {
      auto part = std::make_shared<Part>();
      m.d->runner_.run(m.d->deactivation_part(part));
      while (!part->finished)
        co_await part->done.wait(env_);
    }
  co_return Errno::TimedOut;
}

// This accelerator and its READY local accelerators go down, one after the other, each in
// its own task. One reset meanwhile (it comes back READY) is no longer the call's.
Task<void> Driver::deactivate_host() {
  std::vector<std::pair<Driver*, std::uint64_t>> members;
  for (Driver* d : local_accels(AccelState::Ready))
    members.emplace_back(d, d->epoch_);
  for (auto [d, epoch] : members) {
    if (d->epoch_ != epoch || d->state_ < AccelState::Ready) continue;
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
  // Its peers are not told, as after a reset: with after_reset = quarantine or announce the
  // ranges granted so far stay out of use (once the connection resets below free them) until
  // every former importer has connected again.
  if (cfg_.after_reset != AfterReset::Lazy) quarantine_on_reset();
  for (AccelId peer = 0; peer < cfg_.accel_max; ++peer)
    if (conns_.established(peer))
      co_await reset_connection(peer, ConnState::NotReady, conns_.generation(peer));
  co_await sleep(cfg_.psp_latency);
  env_.npa_enable(false);
  env_.rings_map(false);
}

}  // namespace podsim::driver
