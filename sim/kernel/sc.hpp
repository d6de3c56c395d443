// The SystemC glue every module uses: time conversion and process spawning without macros.
#pragma once

#include <new>
#include <systemc>
#include <type_traits>
#include <utility>

#include "sim/core/units.hpp"

namespace podsim {

// podsim runs SystemC with a 1 ps resolution (the default), so sc_time values are ps counts.
// Made in place: sc_time::from_value is a call into the library that also marks the time
// resolution fixed, every time (about 20 instructions; a remote access converts seven
// delays). The Dispatcher's constructor marks it once, before anything is timed. An sc_time
// is standard-layout with its count as its only member, so a pointer to it is a pointer to
// the count.
inline sc_core::sc_time to_sc(Time t) {
  using Value = sc_core::sc_time::value_type;
  static_assert(std::is_standard_layout_v<sc_core::sc_time> &&
                sizeof(sc_core::sc_time) == sizeof(Value));
  sc_core::sc_time s;
  *std::launder(reinterpret_cast<Value*>(&s)) = static_cast<Value>(t.as_ps());
  return s;
}
inline Time from_sc(const sc_core::sc_time& t) {
  return Time::ps(static_cast<std::int64_t>(t.value()));
}

namespace kernel_detail {
// Set while the dispatcher serves queued work (timed_queue.hpp): its time is the simulated
// time then, which may be ahead of the SystemC kernel's.
extern bool dispatching;
extern Time dispatch_now;
extern bool kernel_touched;  // an event was notified while dispatching
}  // namespace kernel_detail

// The SystemC kernel's own time.
inline Time kernel_now() {
  return from_sc(sc_core::sc_time_stamp());
}
// The current simulated time: the dispatcher's while it serves queued work, else the kernel's.
inline Time sim_now() {
  return kernel_detail::dispatching ? kernel_detail::dispatch_now : kernel_now();
}

// Notifies `ev` `delay` after the current simulated time. Code the dispatcher may run (any
// module's handler, the driver's coroutines) notifies SystemC events only through this, so
// that a notification made while the dispatcher is ahead of the kernel lands at the right time.
void notify_event(sc_core::sc_event& ev, Time delay = Time{});

// An SC_METHOD-style process: `fn` runs each time `ev` fires (not at time zero).
template <class Fn>
void spawn_method(const char* name, const sc_core::sc_event& ev, Fn&& fn) {
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.set_sensitivity(&ev);
  opt.dont_initialize();
  sc_core::sc_spawn(std::forward<Fn>(fn), name, &opt);
}

// An SC_THREAD-style process (control paths only: a thread switch costs far more).
template <class Fn>
void spawn_thread(const char* name, Fn&& fn) {
  sc_core::sc_spawn_options opt;
  sc_core::sc_spawn(std::forward<Fn>(fn), name, &opt);
}

}  // namespace podsim
