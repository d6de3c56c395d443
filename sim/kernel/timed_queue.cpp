#include "sim/kernel/timed_queue.hpp"

namespace podsim {

QueueBase::QueueBase() : id_(Dispatcher::get().add(this)) {}
QueueBase::~QueueBase() {
  Dispatcher::get().remove(id_);
}
void QueueBase::schedule(Time due) {
  Dispatcher::get().schedule(id_, due);
}

Dispatcher& Dispatcher::get() {
  // Never destroyed: queues of modules torn down at exit may still unregister.
  static Dispatcher* d = new Dispatcher;
  return *d;
}

Dispatcher::Dispatcher() {
  sc_core::sc_spawn_options opt;
  opt.spawn_method();
  opt.set_sensitivity(&ev_);
  opt.dont_initialize();
  sc_core::sc_spawn([this] { run(); }, sc_core::sc_gen_unique_name("podsim_dispatcher"), &opt);
}

std::uint32_t Dispatcher::add(QueueBase* q) {
  queues_.push_back(q);
  scheduled_.push_back(Time::max());
  return static_cast<std::uint32_t>(queues_.size() - 1);
}

void Dispatcher::schedule(std::uint32_t id, Time due) {
  if (due >= scheduled_[id]) return;  // already in the heap for an earlier time
  scheduled_[id] = due;
  heap_.push_back(Entry{due, id});
  std::push_heap(heap_.begin(), heap_.end(), std::greater<>{});
  // While serving, work due now is picked up by the loop; anything later re-arms at the end.
  if (!running_ && heap_.front().id == id && heap_.front().due == due) {
    const Time now = sim_now();
    ++counters_.notifications;
    ev_.notify(to_sc(due > now ? due - now : Time{}));
  }
}

void Dispatcher::run() {
  const Time now = sim_now();
  ++counters_.activations;
  running_ = true;
  while (!heap_.empty() && heap_.front().due <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<>{});
    const Entry e = heap_.back();
    heap_.pop_back();
    if (scheduled_[e.id] == e.due) scheduled_[e.id] = Time::max();
    if (QueueBase* q = queues_[e.id]) q->serve_due(now);
  }
  running_ = false;
  if (!heap_.empty()) {
    ++counters_.notifications;
    ev_.notify(to_sc(heap_.front().due - now));
  }
}

}  // namespace podsim
