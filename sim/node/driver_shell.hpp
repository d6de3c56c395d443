// DriverShell: gives the plain-C++ Driver time and hardware. It is the Driver's Scheduler
// (callbacks at simulated times, on SystemC events), carries out its hardware programming on
// GpuVm, NpaMmu and Vram at once, and implements message sending the way the snapshot does:
// write the command into the receiver's ring through the firmware mailbox, then poll the
// write-back page every poll_interval_min..max until the receiver's firmware reports it
// consumed, or give up with ETIME after writeback_timeout.
#pragma once

#include <functional>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_set>

#include "driver_model/driver.hpp"
#include "models/gpuvm/gpuvm.hpp"
#include "models/mailbox/firmware_mailbox.hpp"
#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"
#include "sim/core/invariants.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {
class Timeline;
}

namespace podsim::driver {

inline Errno aborted_value(const Errno*) {
  return Errno::NoDev;
}
template <class X>
Result<X> aborted_value(const Result<X>*) {
  return Result<X>{Errno::NoDev, {}};
}

class DriverShell final : public sc_core::sc_module, public HasStats, private DriverEnv {
 public:
  DriverShell(sc_core::sc_module_name name, const DriverConfig& cfg, AccelId self, VpodInfo vpod,
              NpaAddrMode mode, std::uint64_t seed, GpuVm& gpuvm, NpaMmu& npa_mmu, Vram& vram,
              FirmwareMailbox& mailbox, InvariantLog* invariants, Dispatcher& events);
  ~DriverShell() override;

  // Starts a driver call now; `done(result)` runs in simulated time when it finishes. A
  // device reset cuts it short: `done` then gets ENODEV; so does a call made while the device
  // is down (its driver reloading), at once.
  template <class T, class Fn>
  void start(Task<T> t, Fn done) {
    if (down_) {
      done(aborted_value(static_cast<const T*>(nullptr)));
      return;
    }
    const std::uint64_t id = next_call_++;
    auto shared = std::make_shared<Fn>(std::move(done));
    aborts_[id] = [shared] { (*shared)(aborted_value(static_cast<const T*>(nullptr))); };
    calls_.run(std::move(t), [this, id, shared](T r) {
      aborts_.erase(id);
      (*shared)(std::move(r));
    });
  }
  void start(Task<void> t, std::function<void()> done);
  // The device is down (from its reset until it comes back): calls fail with ENODEV.
  void set_down(bool down) {
    down_ = down;
    driver_.set_down(down);
  }
  bool down() const { return down_; }

  // From an SC_THREAD: runs a driver call to its end and returns its result.
  template <class T>
  T call(Task<T> t) {
    std::optional<T> result;
    sc_core::sc_event ev;
    start(std::move(t), [&](T r) {
      result = std::move(r);
      notify_event(ev);
    });
    while (!result)
      sc_core::wait(ev);
    return std::move(*result);
  }
  void call(Task<void> t);
  // How activation maps (true) or unmaps the rings' receive pages: the PTEs written.
  void set_rings(std::function<std::uint64_t(bool)> fn) { rings_ = std::move(fn); }

  // The device is reset: calls in flight end with ENODEV and the driver loses its state.
  void device_reset();

  Driver& driver() { return driver_; }
  const Driver& driver() const { return driver_; }
  const Distribution& send_time() const { return send_time_; }
  // Nothing in progress: no call, no message being sent or handled, no revoke.
  bool quiescent() const { return calls_.running() == 0 && sends_.empty() && driver_.quiescent(); }
  const StatGroup& stat_group() const override { return stats_; }
  // Driver calls, messages sent and messages handled go to this timeline (null: nowhere).
  void set_timeline(Timeline* t) { timeline_ = t; }

 private:
  // Scheduler
  Time now() const override { return sim_now(); }
  Time wake_latency() const override { return cfg_.wake_latency; }
  TimerId call_at(Time at, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  // DriverEnv
  Task<std::optional<std::vector<std::uint64_t>>> vram_alloc(std::uint64_t pages) override;
  void vram_free(std::span<const std::uint64_t> pages) override;
  void vram_pin(std::span<const std::uint64_t> pages) override;
  void vram_unpin(std::span<const std::uint64_t> pages) override;
  void vram_copy_page(std::uint64_t from, std::uint64_t to) override;
  void npa_map(std::uint64_t first_key, std::span<const std::uint64_t> vram_pages,
               std::uint64_t tag, std::uint8_t max_fragment) override;
  void npa_set_retry(std::uint64_t key, bool retry) override;
  void npa_set_retry(std::uint64_t first_key, std::uint64_t pages, bool retry) override;
  void npa_unmap(std::uint64_t first_key, std::uint64_t pages) override;
  Time npa_flush_tlb() override;
  bool npa_any_mapped(std::uint64_t first_key, std::uint64_t pages) const override;
  void gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages, const Pte& proto,
                 std::span<const std::uint64_t> frames) override;
  void gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages) override;
  Time gpuvm_flush_tlb(std::uint16_t vmid, std::uint64_t first, std::uint64_t pages,
                       FlushKind kind) override;
  Task<Errno> send(AccelId dst, Ring ring, Dwords command) override;
  void note_released(std::uint64_t tag, AccelId importer) override;
  void note_granted(std::uint64_t tag, AccelId importer) override;
  void npa_enable(bool on) override;
  std::uint64_t rings_map(bool up) override { return rings_ ? rings_(up) : 0; }
  void firmware_load() override;
  bool firmware_ready() const override;
  void firmware_halt() override;
  void note_violation(const std::string& what) override;
  void note_call(std::string_view what, Time start, const std::string& detail) override;
  void note_message(std::string_view what, AccelId from) override;

  void note_send(AccelId dst, Ring ring, const Dwords& command, Time t0, const char* outcome);

  struct Callback {
    TimerId id;
    std::function<void()> fn;
  };
  using SendKey = std::tuple<AccelId, unsigned, std::uint32_t>;
  struct SendState {
    bool consumed = false;
    std::uint32_t status = 0;
  };

  DriverConfig cfg_;
  AccelId self_;
  Timeline* timeline_ = nullptr;
  GpuVm& gpuvm_;
  NpaMmu& npa_mmu_;
  Vram& vram_;
  FirmwareMailbox& mailbox_;
  InvariantLog* invariants_;
  Rng poll_rng_;
  TimedQueue<Callback> timers_;
  std::unordered_set<TimerId> pending_;  // queued and not cancelled: bounded by the queue
  TimerId next_timer_ = 1;
  std::map<SendKey, SendState> sends_;

  StatGroup stats_;
  Distribution send_time_{stats_, "send_time", "ns",
                          "a message's cost to its sender: from writing it to seeing it "
                          "consumed when polling the write-back page",
                          kPsPerNs};
  Counter polls_{stats_, "writeback_polls", "count", "polls of the write-back page"};
  Counter send_timeouts_{stats_, "send_timeouts", "count",
                         "messages never reported consumed (ETIME)"};
  Driver driver_;
  std::map<std::uint64_t, std::function<void()>> aborts_;
  std::function<std::uint64_t(bool)> rings_;
  std::uint64_t next_call_ = 1;
  bool down_ = false;
  TaskRunner calls_;  // last: its frames go before what they refer to
};

}  // namespace podsim::driver
