// A scheduler for the driver's parts tested alone: what is due runs when the test asks (time
// stands still), enough to wake a coroutine's waiters.
#pragma once

#include <functional>
#include <utility>
#include <vector>

#include "driver_model/coro.hpp"

namespace podsim::driver::test {

class Steps : public Scheduler {
 public:
  Time now() const override { return Time(); }
  TimerId call_at(Time, std::function<void()> fn) override {
    due_.push_back(std::move(fn));
    return due_.size();
  }
  void cancel(TimerId id) override {
    if (id != 0 && id <= due_.size()) due_[id - 1] = nullptr;
  }
  void run() {
    for (std::size_t i = 0; i < due_.size(); ++i)
      if (auto fn = std::exchange(due_[i], nullptr)) fn();
  }

 private:
  std::vector<std::function<void()>> due_;
};

}  // namespace podsim::driver::test
