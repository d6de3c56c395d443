// A module's queue of work items due at given times, served in (time, arrival) order by one
// SystemC event: the "one kernel event per hop" of the hot path. Pushing never allocates once
// the reserved capacity is reached; a pushed item earlier than the pending one re-arms the
// event (sc_event keeps the earliest notification).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/kernel/sc.hpp"

namespace podsim {

template <class Item>
class TimedQueue {
 public:
  explicit TimedQueue(std::size_t reserve = 64) { heap_.reserve(reserve); }

  const sc_core::sc_event& event() const { return ev_; }
  bool empty() const { return heap_.empty(); }
  std::size_t size() const { return heap_.size(); }

  // Queue `item` for simulated time `due` (>= now).
  void push(Time due, Item item) {
    heap_.push_back(Entry{due, seq_++, std::move(item)});
    std::push_heap(heap_.begin(), heap_.end(), Later{});
    if (heap_.front().seq == seq_ - 1) arm();
  }

  // Serves every item due now, in order; call from the process sensitive to event().
  template <class Fn>
  void drain(Fn&& serve) {
    const Time now = sim_now();
    while (!heap_.empty() && heap_.front().due <= now) {
      std::pop_heap(heap_.begin(), heap_.end(), Later{});
      Item item = std::move(heap_.back().item);
      heap_.pop_back();
      serve(item);
    }
    if (!heap_.empty()) arm();
  }

 private:
  struct Entry {
    Time due;
    std::uint64_t seq;
    Item item;
  };
  struct Later {
    bool operator()(const Entry& a, const Entry& b) const {
      return a.due != b.due ? a.due > b.due : a.seq > b.seq;
    }
  };
  void arm() {
    Time d = heap_.front().due - sim_now();
    ev_.notify(to_sc(d < Time{} ? Time{} : d));
  }

  std::vector<Entry> heap_;
  std::uint64_t seq_ = 0;
  sc_core::sc_event ev_;
};

}  // namespace podsim
