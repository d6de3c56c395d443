// A tiny world for the driver model with no SystemC: one clock and event queue, N drivers,
// fake hardware that records what the drivers program, and a transport that delivers a
// message a fixed time after it is sent and reports it consumed a little later (or, for the
// destinations a test names, after a write-back poll it chooses).
#pragma once

#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <unordered_set>

#include "driver_model/driver.hpp"

namespace podsim::test {

using namespace podsim::driver;

class World;

class FakeEnv final : public DriverEnv {
 public:
  FakeEnv(World& w, AccelId self) : world_(w), self_(self) {}

  Time now() const override;
  Time wake_latency() const override { return wake; }
  TimerId call_at(Time at, std::function<void()> fn) override;
  void cancel(TimerId id) override;

  Task<std::optional<std::vector<std::uint64_t>>> vram_alloc(std::uint64_t pages) override {
    if (pages > free_pages) co_return std::nullopt;
    free_pages -= pages;
    std::vector<std::uint64_t> out;
    for (std::uint64_t i = 0; i < pages; ++i)
      out.push_back(next_page_ += 2);  // scattered
    co_return out;
  }
  void vram_pin(std::span<const std::uint64_t> pages) override { pinned += pages.size(); }
  void vram_unpin(std::span<const std::uint64_t> pages) override { pinned -= pages.size(); }
  void vram_free(std::span<const std::uint64_t> pages) override { free_pages += pages.size(); }
  void vram_copy_page(std::uint64_t from, std::uint64_t to) override {
    copied_pages.emplace_back(from, to);
  }
  std::vector<std::pair<std::uint64_t, std::uint64_t>> copied_pages;
  void npa_map(std::uint64_t first, std::span<const std::uint64_t> pages, std::uint64_t tag,
               std::uint8_t /*max_fragment*/) override {
    for (std::size_t i = 0; i < pages.size(); ++i)
      npa[first + i] = {pages[i], tag, false};
  }
  void npa_set_retry(std::uint64_t key, bool retry) override {
    if (npa.count(key)) npa[key].retry = retry;
  }
  void npa_set_retry(std::uint64_t first, std::uint64_t pages, bool retry) override {
    for (auto it = npa.lower_bound(first); it != npa.end() && it->first < first + pages; ++it)
      it->second.retry = retry;
  }
  void npa_unmap(std::uint64_t first, std::uint64_t pages) override {
    npa.erase(npa.lower_bound(first), npa.lower_bound(first + pages));
  }
  Time npa_flush_tlb() override {
    ++npa_flushes;
    return Time::us(1);
  }
  bool npa_any_mapped(std::uint64_t first, std::uint64_t pages) const override {
    auto it = npa.lower_bound(first);
    return it != npa.end() && it->first < first + pages;
  }
  void gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages, const Pte& proto,
                 std::span<const std::uint64_t> frames) override {
    for (std::uint64_t i = 0; i < pages; ++i) {
      Pte p = proto;
      p.frame = frames.empty() ? proto.frame + i : frames[i];
      gpuvm[{vmid, va_page + i}] = p;
    }
  }
  void gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages) override {
    for (std::uint64_t i = 0; i < pages; ++i)
      gpuvm.erase({vmid, va_page + i});
  }
  Time gpuvm_flush_tlb(std::uint16_t, std::uint64_t, std::uint64_t, FlushKind) override {
    ++gpuvm_flushes;
    return Time::us(1);
  }
  Task<Errno> send(AccelId dst, Ring ring, Dwords command) override;
  void note_released(std::uint64_t tag, AccelId importer) override {
    released.insert({tag, importer});
  }
  void note_violation(const std::string& what) override { violations.push_back(what); }
  // Activation's hardware: NPA translation on or off, the rings (16 PTEs), the firmware.
  void npa_enable(bool on) override { npa_enabled = on; }
  std::uint64_t rings_map(bool up) override {
    rings_mapped = up;
    return 16;
  }
  void firmware_load() override {
    firmware_loaded = true;
    firmware_ready_at = now() + firmware_load_time;
  }
  bool firmware_ready() const override {
    return firmware_loaded && !firmware_never_ready && now() >= firmware_ready_at;
  }
  void firmware_halt() override { firmware_loaded = false; }
  bool npa_enabled = true, rings_mapped = true, firmware_loaded = true;
  bool firmware_never_ready = false;
  Time firmware_load_time = Time::us(100), firmware_ready_at;

  struct NpaPte {
    std::uint64_t page, tag;
    bool retry;
  };
  std::map<std::uint64_t, NpaPte> npa;
  std::map<std::pair<std::uint16_t, std::uint64_t>, Pte> gpuvm;
  std::set<std::pair<std::uint64_t, AccelId>> released;
  std::vector<std::string> violations;
  int npa_flushes = 0, gpuvm_flushes = 0, shootdowns_received = 0;
  std::uint64_t free_pages = 1 << 20;
  std::int64_t pinned = 0;
  bool dead = false;       // neither takes nor answers anything (its firmware is gone)
  bool deaf = false;       // its firmware takes messages, but its driver never sees them
  bool ring_full = false;  // every ring at every peer is full
  // By destination: how long after writing a command there this GPU's polling first sees it
  // consumed (a later poll of the write-back page); World::kConsumed for the others.
  std::map<AccelId, Time> consumed_after;
  std::uint64_t sent = 0;
  Time wake{};  // the driver config's wake_latency
  // Every protocol message sent (the interrupt ring's commands), with its receiver.
  std::vector<std::pair<AccelId, Dwords>> messages;

 private:
  World& world_;
  AccelId self_;
  std::uint64_t next_page_ = 100;
};

class World : public Scheduler {
 public:
  static constexpr Time kDeliver = Time::us(3);   // ring write + doorbell + firmware + IRQ
  static constexpr Time kConsumed = Time::us(2);  // when the sender sees the write-back

  explicit World(int n, NpaAddrMode mode = NpaAddrMode::SourceAliasing, std::uint64_t seed = 1,
                 DriverConfig cfg = {}) {
    DriverConfig c = cfg;
    c.accel_max = std::max<std::uint32_t>(c.accel_max, static_cast<std::uint32_t>(n));
    VpodInfo vpod;
    vpod.members.assign(kMaxAccels, false);
    for (int i = 0; i < n; ++i)
      vpod.members[i] = true;
    for (int i = 0; i < n; ++i) {
      envs.push_back(std::make_unique<FakeEnv>(*this, static_cast<AccelId>(i)));
      envs.back()->wake = c.wake_latency;
      drivers.push_back(std::make_unique<Driver>(c, static_cast<AccelId>(i), vpod, mode,
                                                 Rng::for_component(seed, "d" + std::to_string(i)),
                                                 *envs.back()));
    }
  }
  ~World() override {
    runner.cancel_all();
    drivers.clear();
  }

  Time now() const override { return now_; }
  TimerId call_at(Time at, std::function<void()> fn) override {
    const TimerId id = next_id_++;
    events_.push(Event{at < now_ ? now_ : at, id, std::move(fn)});
    return id;
  }
  void cancel(TimerId id) override { cancelled_.insert(id); }

  // Runs events until none are left (idle workers wait without events) or `limit`.
  void run(Time limit = Time::ms(60'000)) {
    while (!events_.empty() && events_.top().t <= limit) {
      Event e = events_.top();
      events_.pop();
      if (cancelled_.erase(e.id)) continue;
      now_ = e.t;
      e.fn();
    }
  }
  void run_for(Time d) { run(now_ + d); }
  // Runs for `d` and moves the clock to its end, whether or not anything happened then.
  void step(Time d) {
    const Time end = now_ + d;
    run(end);
    now_ = end;
  }

  // Runs a driver call from the start to its end (running the world meanwhile).
  template <class T>
  T call(Task<T> t) {
    std::optional<T> r;
    runner.run(std::move(t), [&](T v) { r = std::move(v); });
    run();
    REQUIRE(r.has_value());
    return std::move(*r);
  }
  void call(Task<void> t) {
    bool done = false;
    struct W {
      static Task<int> wrap(Task<void> t) {
        co_await std::move(t);
        co_return 0;
      }
    };
    runner.run(W::wrap(std::move(t)), [&](int) { done = true; });
    run();
    REQUIRE(done);
  }
  // Starts a call without running the world; its result lands in `out`.
  template <class T>
  void start(Task<T> t, std::optional<T>& out) {
    runner.run(std::move(t), [&out](T v) { out = std::move(v); });
  }

  Driver& d(int i) { return *drivers[i]; }
  FakeEnv& env(int i) { return *envs[i]; }

  GemHandle buffer(int i, std::uint64_t bytes = 1 << 20, ProcessId p = 1) {
    auto g = call(d(i).gem_create(p, Bytes(bytes), Domain::Vram));
    REQUIRE(g.ok());
    return g.value;
  }
  UalinkHandle exported(int i, std::uint64_t bytes = 1 << 20, ProcessId p = 1,
                        GemHandle* gem = nullptr) {
    GemHandle g = buffer(i, bytes, p);
    if (gem) *gem = g;
    auto h = call(d(i).export_handle(p, g));
    REQUIRE(h.ok());
    return h.value;
  }
  Result<Fd> import(int i, const UalinkHandle& h, ProcessId p = 1) {
    return call(d(i).import_handle(p, h));
  }
  // Imports and maps at `va`; returns the GEM handle of the NPA buffer.
  GemHandle import_and_map(int i, const UalinkHandle& h, std::uint64_t va, ProcessId p = 1) {
    auto fd = import(i, h, p);
    REQUIRE(fd.ok());
    auto g = call(d(i).prime_fd_to_handle(p, fd.value));
    REQUIRE(g.ok());
    REQUIRE(call(d(i).close_fd(p, fd.value)) == Errno::Ok);
    REQUIRE(call(d(i).gem_va_map(p, g.value, va)) == Errno::Ok);
    return g.value;
  }

  std::vector<std::unique_ptr<FakeEnv>> envs;
  std::vector<std::unique_ptr<Driver>> drivers;
  TaskRunner runner;

 private:
  struct Event {
    Time t;
    TimerId id;
    std::function<void()> fn;
    bool operator<(const Event& o) const { return t != o.t ? t > o.t : id > o.id; }
  };
  std::priority_queue<Event> events_;
  std::unordered_set<TimerId> cancelled_;
  TimerId next_id_ = 1;
  Time now_;
};

inline Time FakeEnv::now() const {
  return world_.now();
}
inline Scheduler::TimerId FakeEnv::call_at(Time at, std::function<void()> fn) {
  return world_.call_at(at, std::move(fn));
}
inline void FakeEnv::cancel(TimerId id) {
  world_.cancel(id);
}

inline Task<Errno> FakeEnv::send(AccelId dst, Ring ring, Dwords command) {
  if (ring_full) co_return Errno::NoSpc;
  FakeEnv& peer = world_.env(dst);
  if (dead || peer.dead) {
    // Nobody consumes it: the sender polls until it gives up.
    co_await Sleep(*this, Time::ms(2000));
    co_return Errno::Time;
  }
  ++sent;
  if (ring == Ring::Interrupt) messages.emplace_back(dst, command);
  World& w = world_;
  const AccelId from = self_;
  w.call_at(now() + World::kDeliver, [&w, dst, from, ring, command] {
    if (w.env(dst).dead || w.env(dst).deaf) return;
    if (ring == Ring::Tlb)
      ++w.env(dst).shootdowns_received;
    else
      w.d(dst).on_interrupt(from, command);
  });
  const auto poll = consumed_after.find(dst);
  co_await Sleep(*this, poll != consumed_after.end() ? poll->second : World::kConsumed);
  co_return Errno::Ok;
}

}  // namespace podsim::test
