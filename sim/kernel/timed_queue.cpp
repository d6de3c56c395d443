#include "sim/kernel/timed_queue.hpp"

namespace podsim {

namespace kernel_detail {
bool dispatching = false;
Time dispatch_now;
bool kernel_touched = false;
}  // namespace kernel_detail

void notify_event(sc_core::sc_event& ev, Time delay) {
  const Time at = sim_now() + delay;
  const Time k = kernel_now();
  if (at == k)
    ev.notify(sc_core::SC_ZERO_TIME);
  else
    ev.notify(to_sc(at - k));
  if (kernel_detail::dispatching) kernel_detail::kernel_touched = true;
}

Dispatcher* Dispatcher::instance_ = nullptr;

void Dispatcher::create() {
  // Never destroyed: queues of modules torn down at exit may still unregister.
  instance_ = new Dispatcher;
}

QueueBase::QueueBase() : rank_(Dispatcher::get().add(this)) {}
QueueBase::~QueueBase() {
  Dispatcher::get().remove(rank_);
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
  return static_cast<std::uint32_t>(queues_.size() - 1);
}

void Dispatcher::sift_up(std::size_t i) {
  const Node n = heap_[i];
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (heap_[parent].due <= n.due) break;
    heap_[i] = heap_[parent];
    i = parent;
  }
  heap_[i] = n;
}

void Dispatcher::sift_down(std::size_t i) {
  const Node n = heap_[i];
  const std::size_t size = heap_.size();
  Node* h = heap_.data();
  while (true) {
    const std::size_t first = 4 * i + 1;
    std::size_t best;
    if (first + 4 <= size) {  // the common case: four children, picked without branches
      const std::size_t a = h[first + 1].due < h[first].due ? first + 1 : first;
      const std::size_t b = h[first + 3].due < h[first + 2].due ? first + 3 : first + 2;
      best = h[b].due < h[a].due ? b : a;
    } else {
      if (first >= size) break;
      best = first;
      for (std::size_t c = first + 1; c < size; ++c)
        best = h[c].due < h[best].due ? c : best;
    }
    if (h[best].due >= n.due) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = n;
}

Dispatcher::Node Dispatcher::heap_pop() {
  const Node top = heap_.front();
  heap_.front() = heap_.back();
  heap_.pop_back();
  if (!heap_.empty()) sift_down(0);
  return top;
}

// The batch is kept in reverse order: the next item to serve at its back.
void Dispatcher::batch_insert(const Node& n) {
  batch_.push_back(n);
  std::size_t i = batch_.size() - 1;
  while (i > 0 && tie_before(batch_[i - 1], n)) {
    batch_[i] = batch_[i - 1];
    --i;
  }
  batch_[i] = n;
}

void Dispatcher::push(Time due, std::uint32_t rank, std::uint64_t key, const void* item,
                      std::size_t n) {
  std::uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  Slot& s = slots_[slot];
  s.key = key;
  s.seq = seq_++;
  if (n) std::memcpy(s.item, item, n);
  const Node node{due.as_ps(), rank, slot};
  if (running_ && due == kernel_detail::dispatch_now) {
    batch_insert(node);  // due at the time being served
    return;
  }
  heap_.push_back(node);
  sift_up(heap_.size() - 1);
  // While serving, the loop picks up what is due; anything later is armed when it ends.
  if (!running_ && due < armed_) arm();
}

// When the SystemC kernel next has something to do (other than this dispatcher), bounded by
// the end of the current run: how far the dispatcher may run ahead.
Time Dispatcher::bound(Time kernel) const {
  if (!has_horizon_ || horizon_ <= kernel) return kernel;
  const sc_core::sc_time ahead = sc_core::sc_time_to_pending_activity();
  const std::uint64_t room = static_cast<std::uint64_t>((horizon_ - kernel).as_ps());
  if (ahead.value() >= room) return horizon_;
  return kernel + from_sc(ahead);
}

void Dispatcher::arm() {
  if (heap_.empty()) return;
  const Time due = Time::ps(heap_.front().due);
  if (due >= armed_) return;
  armed_ = due;
  const Time k = kernel_now();
  ++counters_.notifications;
  ev_.notify(to_sc(due > k ? due - k : Time{}));
}

void Dispatcher::run() {
  const Time k = kernel_now();
  ++counters_.activations;
  armed_ = Time::max();
  running_ = true;
  kernel_detail::dispatching = true;
  kernel_detail::kernel_touched = false;
  Time limit = bound(k);
  while (true) {
    if (batch_.empty()) {
      // The next time with work: everything due then, in the contract's order.
      if (heap_.empty() || heap_.front().due > limit.as_ps()) break;
      const std::int64_t due = heap_.front().due;
      batch_.push_back(heap_pop());
      while (!heap_.empty() && heap_.front().due == due)
        batch_insert(heap_pop());
      kernel_detail::dispatch_now = Time::ps(due);
    }
    const Node top = batch_.back();
    batch_.pop_back();
    alignas(8) unsigned char item[QueueBase::kInlineBytes];
    std::memcpy(item, slots_[top.slot].item, sizeof item);
    free_slots_.push_back(top.slot);
    ++counters_.serves;
    if (QueueBase* q = queues_[top.rank]) q->serve(item);
    if (kernel_detail::kernel_touched) {  // a SystemC event now due: do not pass it
      kernel_detail::kernel_touched = false;
      limit = bound(k);
    }
  }
  kernel_detail::dispatching = false;
  running_ = false;
  arm();
}

void run_simulation(Time duration) {
  Dispatcher& d = Dispatcher::get();
  d.set_horizon(kernel_now() + duration);
  sc_core::sc_start(to_sc(duration));
  d.clear_horizon();
}

}  // namespace podsim
