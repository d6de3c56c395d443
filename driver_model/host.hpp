// The accelerators of one host (reference §1; a multi-GPU host is one node): at most 8
// (LOCAL_ACCELS_MAX). Those of them with the same vPod ID (and pPod: a podsim pod is one) are
// each other's local accelerators: a vPod commit checks them against each other (sizes, address
// mode, members; accelerator IDs unique), and they are activated and deactivated together.
// Bring-up calls on any accelerator of the host run one at a time, each as a task of the host's
// (not of the accelerator that made it): a reset of that accelerator abandons its wait for the
// call, not the call, so the others' parts are started and waited for, and the lock is held
// until they have finished. There is no same-host shortcut: an import between two of them
// goes over the fabric like any other.
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <vector>

#include "driver_model/coro.hpp"

namespace podsim::driver {

class Driver;

class Host {
 public:
  static constexpr std::size_t kMaxAccels = 8;  // LOCAL_ACCELS_MAX

  // `d` must outlive the host's use (the pod owns both).
  void add(Driver& d) {
    if (drivers_.size() == kMaxAccels)
      throw std::invalid_argument("a host has at most 8 accelerators (LOCAL_ACCELS_MAX)");
    drivers_.push_back(&d);
  }
  std::span<Driver* const> drivers() const { return drivers_; }
  Mutex& bring_up_lock() { return bring_up_lock_; }
  // A bring-up call's task (Driver::bring_up).
  void run(Task<void> call) { calls_.run(std::move(call)); }
  // Abandons the calls under way (the pod is going: a driver's destructor, before what they
  // wait on goes).
  void stop() { calls_.cancel_all(); }

 private:
  std::vector<Driver*> drivers_;
  Mutex bring_up_lock_;
  TaskRunner calls_;  // last: destroyed first
};

}  // namespace podsim::driver
