// Where a run's host time goes: setting the pod up (elaboration and the protocol until the
// first access phase starts), the access phases (while any GPU's compute agent is issuing or
// waiting for accesses), and the teardown after the last one. Also the kernel's work done
// inside the access phases, so a benchmark can say what one remote access costs without the
// setup around it. Host clocks only: nothing here feeds back into the simulation. When the
// first access phase begins, the pod's state is moved onto huge pages (sim/core/huge_pages.hpp;
// PODSIM_HUGE_PAGES=0 in the environment leaves it alone, as split runs do), which changes no
// result.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "sim/core/huge_pages.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class HostPhases {
 public:
  using Clock = std::chrono::steady_clock;

  HostPhases() : start_(Clock::now()) {}
  // Whose kernel work to count (the pod's dispatcher, before the first phase begins).
  void count(const Dispatcher& events) { events_ = &events; }
  // Leave the process's memory on small pages (a rank of a split run: it holds the whole pod
  // but simulates a part, and moving all of it costs more than the part gains: pod-1024 at 2
  // ranks, 4 runs each, 2.71 s with against 2.61 s without).
  void keep_small_pages() { small_pages_ = true; }

  // An access phase starts (a GPU's agent starts) or ends (its last access completed).
  void phase_begin() {
    if (active_++ > 0) return;
    // The pod is built: its state goes onto huge pages (part of the setup's host time).
    if (!any_ && !small_pages_) huge_pages_ = use_huge_pages_unless_disabled();
    const auto now = Clock::now();
    if (!any_) first_begin_ = now;
    any_ = true;
    begin_ = now;
    at_begin_ = events_ ? events_->counters() : KernelCounters{};
  }
  void phase_end() {
    if (active_ == 0 || --active_ > 0) return;
    const auto now = Clock::now();
    access_ += now - begin_;
    last_end_ = now;
    const KernelCounters c = events_ ? events_->counters() : KernelCounters{};
    in_phases_.serves += c.serves - at_begin_.serves;
    in_phases_.activations += c.activations - at_begin_.activations;
    in_phases_.notifications += c.notifications - at_begin_.notifications;
  }
  // The simulation has ended (called once, after the run).
  void finish() { end_ = Clock::now(); }

  // Which of the three the run is in now, as an index into kNames: setting up (no access phase
  // has begun), in an access phase, or after one (the teardown, and any gap between phases).
  enum Phase : std::size_t { Setup, Access, After, kPhases };
  static constexpr const char* kNames[kPhases] = {"setup", "access", "teardown"};
  Phase phase() const { return !any_ ? Setup : active_ > 0 ? Access : After; }

  double setup_seconds() const { return seconds((any_ ? first_begin_ : end_) - start_); }
  double access_seconds() const { return seconds(access_); }
  double teardown_seconds() const { return any_ && active_ == 0 ? seconds(end_ - last_end_) : 0; }
  double total_seconds() const { return seconds(end_ - start_); }
  // The kernel's work inside access phases.
  const KernelCounters& in_access_phases() const { return in_phases_; }
  // What use_huge_pages did as the first access phase began.
  const HugePageReport& huge_pages() const { return huge_pages_; }

 private:
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
  Clock::time_point start_, first_begin_, begin_, last_end_, end_;
  Clock::duration access_{};
  unsigned active_ = 0;
  bool any_ = false;
  bool small_pages_ = false;
  const Dispatcher* events_ = nullptr;
  KernelCounters at_begin_, in_phases_;
  HugePageReport huge_pages_;
};

}  // namespace podsim
