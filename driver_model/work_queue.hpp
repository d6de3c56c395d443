// The driver's workers and their queues (protocol reference, §3 and §7): the IRQ worker takes
// protocol messages off a software ring and handles them one at a time, in arrival order; the
// cleanup worker runs the revokes whose last reference went. Each is a WorkQueue (a FIFO and
// the wait queue its worker sleeps on) and serve() (the worker's loop). Plain C++; the Driver
// posts the work and gives the handlers, this keeps the order and the rules
// (tests/unit/test_work_queue.cpp).
#pragma once

#include <cstddef>
#include <deque>
#include <utility>

#include "driver_model/coro.hpp"
#include "sim/core/digest.hpp"

namespace podsim::driver {

template <class Item>
class WorkQueue {
 public:
  WorkQueue() = default;
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Appends `item` and wakes the worker; it runs after the caller's current step.
  void post(Item item) {
    items_.push_back(std::move(item));
    ready_.wake_all();
  }
  // co_await q.next(sched) -> the oldest item, once there is one (FIFO). A woken worker looks
  // again: the queue may have been cleared meanwhile, or another taker was first.
  Task<Item> next(Scheduler& sched) {
    while (items_.empty())
      co_await ready_.wait(sched);
    Item item = std::move(items_.front());
    items_.pop_front();
    co_return item;
  }
  // Device reset: queued work is dropped (a waiting worker goes on waiting).
  void clear() { items_.clear(); }

  bool empty() const { return items_.empty(); }
  std::size_t size() const { return items_.size(); }
  // Workers waiting for work.
  std::size_t waiting() const { return ready_.size(); }
  // Nothing queued, and its one worker waiting for work: not handling an item, not woken to
  // take one.
  bool idle() const { return items_.empty() && ready_.size() == 1; }
  // The number of items queued (the driver's state digest has it under "work").
  void digest(Digest& d) const { d.add(items_.size()); }

 private:
  std::deque<Item> items_;
  WaitQueue ready_;
};

// A worker: takes `q`'s items in order and handles each to completion before it takes the next
// (`handle(item)` returns a Task<void>; while it blocks, it holds the worker and later items
// wait). Runs until its frame is destroyed (a device reset, the driver going).
template <class Item, class Handler>
Task<void> serve(WorkQueue<Item>& q, Scheduler& sched, Handler handle) {
  while (true) {
    Item item = co_await q.next(sched);
    co_await handle(std::move(item));
  }
}

}  // namespace podsim::driver
