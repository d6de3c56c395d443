// Timed work for the hot path, and the dispatcher that serves it.
//
// Every module keeps its pending work in TimedQueues: items due at a time, served by the
// module's handler in (time, key, arrival) order. One Dispatcher per simulation serves all of
// them from a single SystemC process: at each simulated time it serves the queues with work
// due, in the order they were created (elaboration order). So:
//  - work at the same simulated time happens in an order that depends on the model alone,
//    never on SystemC's scheduling of processes (a replayed trace gives identical results);
//  - the SystemC kernel sees one event per distinct time instead of one per hop.
// Pushing allocates nothing once a queue has grown to its working size.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "sim/kernel/sc.hpp"

namespace podsim {

class QueueBase {
 public:
  virtual ~QueueBase();
  // Serves every item due at or before `now`.
  virtual void serve_due(Time now) = 0;

 protected:
  QueueBase();
  void schedule(Time due);  // this queue's earliest item is due then
  std::uint32_t id_;
};

// Deterministic counts of the kernel's work (for benchmarks and the speed guard in CI).
struct KernelCounters {
  std::uint64_t serves = 0;         // queue items (and wake-ups) served
  std::uint64_t activations = 0;    // times the SystemC kernel ran the dispatcher
  std::uint64_t notifications = 0;  // SystemC event notifications the dispatcher made
};

class Dispatcher {
 public:
  static Dispatcher& get();
  const KernelCounters& counters() const { return counters_; }
  void count_serve() { ++counters_.serves; }
  std::uint32_t add(QueueBase* q);
  void remove(std::uint32_t id) { queues_[id] = nullptr; }
  void schedule(std::uint32_t id, Time due);

 private:
  Dispatcher();
  void run();
  struct Entry {
    Time due;
    std::uint32_t id;
    bool operator>(const Entry& o) const { return due != o.due ? due > o.due : id > o.id; }
  };
  std::vector<Entry> heap_;
  std::vector<QueueBase*> queues_;
  std::vector<Time> scheduled_;  // per queue: the earliest time it is in the heap for
  sc_core::sc_event ev_;
  bool running_ = false;
  KernelCounters counters_;
};

template <class Item>
class TimedQueue final : public QueueBase {
 public:
  using Handler = std::function<void(Item&)>;
  explicit TimedQueue(Handler handler, std::size_t reserve = 64) : handler_(std::move(handler)) {
    heap_.reserve(reserve);
  }

  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }

  // Queues `item` for simulated time `due` (>= now). Items due at the same time are served in
  // order of `key` (packets pass their access ID: an order the model fixes), then of arrival.
  void push(Time due, Item item, std::uint64_t key = 0) {
    heap_.push_back(Entry{due, key, seq_++, std::move(item)});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    if (heap_.front().seq == seq_ - 1) schedule(due);
  }

  void serve_due(Time now) override {
    while (!heap_.empty() && heap_.front().due <= now) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      Item item = std::move(heap_.back().item);
      heap_.pop_back();
      Dispatcher::get().count_serve();
      handler_(item);
    }
    if (!heap_.empty()) schedule(heap_.front().due);
  }

 private:
  struct Entry {
    Time due;
    std::uint64_t key;
    std::uint64_t seq;
    Item item;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      if (a.due != b.due) return a.due > b.due;
      if (a.key != b.key) return a.key > b.key;
      return a.seq > b.seq;
    }
  };
  Handler handler_;
  std::vector<Entry> heap_;
  std::uint64_t seq_ = 0;
};

// A wake-up at a time: `at(t)` asks for `fn` to run at t (the earliest asked for wins; a
// wake-up asked for while one is pending earlier is covered by it). No queue of its own: it
// is served by the dispatcher directly.
class Timer final : public QueueBase {
 public:
  explicit Timer(std::function<void()> fn) : fn_(std::move(fn)) {}
  void at(Time t) {
    if (t >= pending_) return;
    pending_ = t;
    schedule(t);
  }
  void cancel() { pending_ = Time::max(); }

  void serve_due(Time now) override {
    if (now < pending_) return;  // superseded by a later request, or cancelled
    pending_ = Time::max();
    Dispatcher::get().count_serve();
    fn_();
  }

 private:
  std::function<void()> fn_;
  Time pending_ = Time::max();
};

}  // namespace podsim
