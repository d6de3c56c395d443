// The SystemC glue every module uses: time conversion and process spawning without macros.
#pragma once

#include <systemc>
#include <utility>

#include "sim/base/units.hpp"

namespace podsim {

// podsim runs SystemC with a 1 ps resolution (the default), so sc_time values are ps counts.
inline sc_core::sc_time to_sc(Time t) {
  return sc_core::sc_time::from_value(static_cast<sc_dt::uint64>(t.as_ps()));
}
inline Time from_sc(const sc_core::sc_time& t) {
  return Time::ps(static_cast<std::int64_t>(t.value()));
}
inline Time sim_now() {
  return from_sc(sc_core::sc_time_stamp());
}

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
