#include "sim/kernel/timed_queue.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "sim/core/natural_order.hpp"

namespace podsim {

namespace kernel_detail {
bool dispatching = false;
Time dispatch_now;
bool kernel_touched = false;
}  // namespace kernel_detail

namespace {
std::uint64_t g_notifications = 0;  // SystemC event notifications (the process's)

}  // namespace

void notify_event(sc_core::sc_event& ev, Time delay) {
  const Time at = sim_now() + delay;
  const Time k = kernel_now();
  if (at == k)
    ev.notify(sc_core::SC_ZERO_TIME);
  else
    ev.notify(to_sc(at - k));
  if (kernel_detail::dispatching) kernel_detail::kernel_touched = true;
  ++g_notifications;
}

QueueBase::QueueBase(Dispatcher& dispatcher, std::string name) : dispatcher_(&dispatcher) {
  rank_ = dispatcher_->add(this, std::move(name));
}
QueueBase::~QueueBase() {
  if (dispatcher_) dispatcher_->remove(this);
}
const std::string& QueueBase::name() const {
  if (!dispatcher_) outlived();
  return dispatcher_->names_[rank_];
}
void QueueBase::set_prefetch(Prefetch fn) {
  check_alive();
  dispatcher_->queues_[rank_].prefetch = fn;
}
void QueueBase::outlived() {
  throw std::logic_error("an event queue was used after its dispatcher was destroyed");
}

Dispatcher::Dispatcher(sc_core::sc_module_name name)
    : sc_module(name), buckets_(kBuckets, kNoChunk), bits_(kBuckets / 64, 0) {
  // sc_time::from_value with a non-zero time fixes the time resolution from here on (what
  // to_sc, sc.hpp, leaves out), and the comparison checks that to_sc's write lands on the
  // count sc_time holds (its static_assert cannot name the private member it writes).
  if (to_sc(Time::ps(1234567)) != sc_core::sc_time::from_value(1234567))
    throw std::logic_error("to_sc (sim/kernel/sc.hpp) does not match this SystemC's sc_time");
  spawn_method("dispatch", ev_, [this] { run(); });
}

Dispatcher::~Dispatcher() {
  // Queues that outlive it (a module destroyed after the pod's dispatcher) may not push again.
  for (const QueueEntry& e : queues_)
    if (e.queue) e.queue->dispatcher_ = nullptr;
}

KernelCounters Dispatcher::counters() const {
  KernelCounters c = counters_;
  c.notifications = g_notifications;
  return c;
}

std::uint32_t Dispatcher::add(QueueBase* q, std::string name) {
  if (!taken_.insert(name).second) throw std::logic_error("two event queues named " + name);
  for (std::size_t i = 0; i < lookaheads_.size(); ++i)
    if (name.starts_with(lookaheads_[i].first)) q->lookahead_ = static_cast<std::uint32_t>(i + 1);
  queues_.push_back(QueueEntry{q, nullptr});
  names_.push_back(std::move(name));
  return static_cast<std::uint32_t>(queues_.size() - 1);
}

void Dispatcher::remove(const QueueBase* q) {
  if (q->rank_ < queues_.size() && queues_[q->rank_].queue == q) {
    queues_[q->rank_] = QueueEntry{};
    taken_.erase(names_[q->rank_]);
  }
}

void Dispatcher::freeze() {
  if (frozen_) return;
  frozen_ = true;
  // Live queues by name; queues destroyed before the start keep an empty place after them
  // (items they left are dropped when due, never served by another queue).
  // Sorted by natural_key (sim/core/natural_order.hpp): natural_less's order, by bytes.
  std::vector<std::string> keys(queues_.size());
  for (std::size_t i = 0; i < queues_.size(); ++i)
    keys[i] = natural_key(names_[i]);
  std::vector<std::size_t> order(queues_.size());  // creation indices, in rank order
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const QueueBase* qa = queues_[a].queue;
    const QueueBase* qb = queues_[b].queue;
    if ((qa == nullptr) != (qb == nullptr)) return qa != nullptr;
    if (const int c = keys[a].compare(keys[b]); c != 0) return c < 0;
    return a < b;  // two gone queues of one name: by creation
  });
  std::vector<QueueEntry> queues;
  std::vector<std::string> names;
  std::vector<std::uint32_t> rank_of(queues_.size());  // by creation index
  for (const std::size_t i : order) {
    rank_of[i] = static_cast<std::uint32_t>(queues.size());
    if (queues_[i].queue) queues_[i].queue->rank_ = rank_of[i];
    queues.push_back(queues_[i]);
    names.push_back(std::move(names_[i]));
  }
  queues_ = std::move(queues);
  names_ = std::move(names);
  // Items pushed before (during elaboration) carry their queue's creation index: renumber
  // them (the calendar's chunks are unsorted and the overflow heap is ordered by time alone;
  // the run, if any, is sorted again).
  for (std::uint32_t head : buckets_)
    for (std::uint32_t c = head; c != kNoChunk; c = chunks_[c].next)
      for (std::uint32_t k = 0; k < chunks_[c].count; ++k)
        chunks_[c].nodes[k].rank = rank_of[chunks_[c].nodes[k].rank];
  for (Node& n : overflow_)
    n.rank = rank_of[n.rank];
  for (Node& n : run_)
    n.rank = rank_of[n.rank];
  for (Node& n : soon_)
    n.rank = rank_of[n.rank];
  const auto later_than = [this](const Node& x, const Node& y) { return later(x, y); };
  std::sort(run_.begin(), run_.end(), later_than);
  std::make_heap(soon_.begin(), soon_.end(), later_than);
}

std::vector<std::string> Dispatcher::queue_order() const {
  std::vector<std::string> names;
  for (std::size_t i = 0; i < queues_.size(); ++i)
    if (queues_[i].queue) names.push_back(names_[i]);
  return names;
}

namespace {
constexpr auto kOverflowLater = [](const auto& a, const auto& b) { return a.due > b.due; };
}  // namespace

std::uint32_t Dispatcher::new_chunk() {
  if (free_chunks_.empty()) {
    chunks_.emplace_back();
    return static_cast<std::uint32_t>(chunks_.size() - 1);
  }
  const std::uint32_t c = free_chunks_.back();
  free_chunks_.pop_back();
  return c;
}

void Dispatcher::file(const Node& n) {
  const std::int64_t b = bucket_of(n.due);
  if (b <= current_) {
    soon_.push_back(n);
    std::push_heap(soon_.begin(), soon_.end(),
                   [this](const Node& x, const Node& y) { return later(x, y); });
  } else if (b < current_ + static_cast<std::int64_t>(kBuckets)) {
    const std::size_t pos = static_cast<std::size_t>(b) & (kBuckets - 1);
    std::uint32_t head = buckets_[pos];
    if (head == kNoChunk || chunks_[head].count == Chunk::kNodes) {
      const std::uint32_t c = new_chunk();
      chunks_[c].count = 0;
      chunks_[c].next = head;
      buckets_[pos] = head = c;
    }
    Chunk& chunk = chunks_[head];
    chunk.nodes[chunk.count++] = n;
    bits_[pos >> 6] |= 1ull << (pos & 63);
  } else {
    overflow_.push_back(n);
    std::push_heap(overflow_.begin(), overflow_.end(), kOverflowLater);
  }
}

void Dispatcher::push_slow(Time due, const QueueBase& q, std::uint64_t key,
                           const QueueBase::ItemBytes& item) {
  // (Never set while serving, so the inline push, which needs the dispatcher serving, does
  // not look.)
  if (due <= due_floor_) [[unlikely]]
    due_in_the_past(due, q);
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
  s.item = item;
  ++pending_;
  file(Node{due.as_ps(), q.rank_, slot});
  // While serving, the loop picks up what is due; anything later is armed when it ends.
  if (!running_ && due < armed_) arm();
}

std::int64_t Dispatcher::next_bucket_after(std::int64_t after) const {
  // The calendar holds buckets current_ + 1 .. current_ + kBuckets - 1.
  const std::int64_t last = current_ + static_cast<std::int64_t>(kBuckets) - 1;
  if (after >= last) return -1;
  const std::size_t start = static_cast<std::size_t>(after + 1) & (kBuckets - 1);
  std::size_t word = start >> 6;
  std::uint64_t bits = bits_[word] & (~0ull << (start & 63));
  for (std::size_t i = 0; i <= kBuckets / 64; ++i) {
    if (bits) {
      const std::size_t pos = (word << 6) + static_cast<std::size_t>(__builtin_ctzll(bits));
      const std::int64_t b = after + 1 + static_cast<std::int64_t>((pos - start) & (kBuckets - 1));
      return b <= last ? b : -1;
    }
    word = (word + 1) & (kBuckets / 64 - 1);
    bits = bits_[word];
  }
  return -1;
}

void Dispatcher::set_lookahead(const std::string& prefix, Time t) {
  if (t.as_ps() < 0) throw std::logic_error("Dispatcher::set_lookahead: a negative lookahead");
  lookaheads_.emplace_back(prefix, t.as_ps());
  const auto rule = static_cast<std::uint32_t>(lookaheads_.size());
  for (std::size_t i = 0; i < queues_.size(); ++i)
    if (queues_[i].queue && names_[i].starts_with(prefix)) queues_[i].queue->lookahead_ = rule;
  min_lookahead_ = std::min(min_lookahead_, t.as_ps());
}

void Dispatcher::set_default_lookahead(Time t) {
  if (t.as_ps() < 0) throw std::logic_error("Dispatcher::set_default_lookahead: negative");
  default_lookahead_ = t.as_ps();
  min_lookahead_ = default_lookahead_;
  for (const auto& rule : lookaheads_)
    min_lookahead_ = std::min(min_lookahead_, rule.second);
}

Time Dispatcher::next_effect() const {
  // Items are looked at in due order, as far as one could still beat the best found (every
  // lookahead is at least min_lookahead_).
  std::int64_t best = INT64_MAX;
  auto consider = [&](const Node& n) {
    const std::int64_t la = lookahead_of(n.rank);
    if (n.due < best - la) best = n.due + la;
  };
  for (const Node& n : run_)
    consider(n);
  for (const Node& n : soon_)
    consider(n);
  for (std::int64_t b = next_bucket(); b >= 0; b = next_bucket_after(b)) {
    if ((b << kBucketShift) >= best - min_lookahead_) break;
    for (std::uint32_t c = buckets_[static_cast<std::size_t>(b) & (kBuckets - 1)]; c != kNoChunk;
         c = chunks_[c].next)
      for (std::uint32_t i = 0; i < chunks_[c].count; ++i)
        consider(chunks_[c].nodes[i]);
  }
  // The overflow heap's front is its earliest item: the rest only if that could still beat it.
  if (!overflow_.empty() && overflow_.front().due < best - min_lookahead_)
    for (const Node& n : overflow_)
      consider(n);
  return best == INT64_MAX ? Time::max() : Time::ps(best);
}

void Dispatcher::due_in_the_past(Time due, const QueueBase& q) const {
  throw std::logic_error("an item for " + names_[q.rank_] + " due at " +
                         std::to_string(due.as_ps()) + " ps arrived at " +
                         std::to_string(due_floor_.as_ps()) +
                         " ps, inside a window this rank has already simulated (a lookahead "
                         "that is not a lower bound)");
}

bool Dispatcher::load_next(Time limit) {
  std::int64_t b = next_bucket();
  if (b < 0) {
    if (overflow_.empty()) return false;
    b = bucket_of(overflow_.front().due);
  }
  if (b > bucket_of(limit.as_ps())) return false;
  current_ = b;
  const std::size_t pos = static_cast<std::size_t>(b) & (kBuckets - 1);
  for (std::uint32_t c = buckets_[pos]; c != kNoChunk;) {
    const Chunk& chunk = chunks_[c];
    // Newest first, each chunk from its last node: the run starts in the reverse of the order
    // its items were pushed, which is its serving order wherever they were pushed in order.
    for (std::uint32_t i = chunk.count; i-- > 0;)
      run_.push_back(chunk.nodes[i]);
    free_chunks_.push_back(c);
    c = chunk.next;
  }
  buckets_[pos] = kNoChunk;
  bits_[pos >> 6] &= ~(1ull << (pos & 63));
  // Items of the overflow heap the window now reaches go into the calendar (the ones of this
  // bucket into the run).
  while (!overflow_.empty() &&
         bucket_of(overflow_.front().due) < current_ + static_cast<std::int64_t>(kBuckets)) {
    const Node n = overflow_.front();
    std::pop_heap(overflow_.begin(), overflow_.end(), kOverflowLater);
    overflow_.pop_back();
    if (bucket_of(n.due) == current_)
      run_.push_back(n);
    else
      file(n);
  }
  for (const Node& n : run_)
    __builtin_prefetch(&slots_[n.slot]);
  if (run_.size() <= 32)  // the usual case: a few items
    insertion_sort(run_.data(), run_.data() + run_.size());
  else
    sort_large_run();
  return true;
}

void Dispatcher::insertion_sort(Node* first, Node* last) const {
  for (Node* i = first + (first != last); i < last; ++i) {
    const Node n = *i;
    Node* j = i;
    for (; j > first && later(n, j[-1]); --j)
      *j = j[-1];
    *j = n;
  }
}

// A big bucket (up to hundreds of items under heavy load in a big pod) is put in order in two
// passes: a counting sort by time into about as many bins as it has items (bins of 2^shift
// ps), then each bin on its own into the contract's order (its slots read only on ties).
void Dispatcher::sort_large_run() {
  const std::size_t n = run_.size();
  const std::int64_t base = current_ << kBucketShift;
  unsigned bits = 5;  // n > 32
  while (bits < kBucketShift && (std::size_t{1} << bits) < n)
    ++bits;
  const unsigned shift = kBucketShift - bits;
  const std::size_t bins = std::size_t{1} << bits;
  auto bin = [&](const Node& x) { return static_cast<std::size_t>(x.due - base) >> shift; };
  sorted_.resize(n);  // before the counts: nothing below throws until they are zero again
  // due_counts_ is all zeros here: it starts so, and the last loop below leaves it so.
  for (const Node& x : run_)
    ++due_counts_[bin(x)];
  // The run is served from its back: the latest bin first in the vector.
  std::uint32_t at = 0;
  for (std::size_t b = bins; b-- > 0;) {
    const std::uint32_t c = due_counts_[b];
    due_counts_[b] = at;
    at += c;
  }
  for (const Node& x : run_)
    sorted_[due_counts_[bin(x)]++] = x;
  // Now due_counts_[b] is where bin b ends; it starts where the bin before it in the vector
  // (b + 1) ends. Each bin into the contract's order: insertion sort for the usual handful,
  // a comparison sort for a crowd (many items due at one time).
  std::uint32_t from = 0;
  for (std::size_t b = bins; b-- > 0;) {
    const std::uint32_t to = due_counts_[b];
    due_counts_[b] = 0;
    if (to - from < 2) {  // empty, or one item
      from = to;
      continue;
    }
    if (to - from > 16) {
      // A crowd (many items due together) often arrives in order (pushed in the order the
      // items before them were served): then one pass says so.
      auto later_fn = [this](const Node& x, const Node& y) { return later(x, y); };
      if (!std::is_sorted(sorted_.data() + from, sorted_.data() + to, later_fn))
        std::sort(sorted_.data() + from, sorted_.data() + to, later_fn);
    } else
      insertion_sort(sorted_.data() + from, sorted_.data() + to);
    from = to;
  }
  run_.swap(sorted_);
}

Time Dispatcher::next_due() const {
  if (!run_.empty() || !soon_.empty()) {
    std::int64_t due = INT64_MAX;
    if (!run_.empty()) due = run_.back().due;
    if (!soon_.empty()) due = std::min(due, soon_.front().due);
    return Time::ps(due);
  }
  const std::int64_t b = next_bucket();
  if (b >= 0) {
    std::int64_t due = INT64_MAX;
    for (std::uint32_t c = buckets_[static_cast<std::size_t>(b) & (kBuckets - 1)]; c != kNoChunk;
         c = chunks_[c].next)
      for (std::uint32_t i = 0; i < chunks_[c].count; ++i)
        due = std::min(due, chunks_[c].nodes[i].due);
    return Time::ps(due);
  }
  return overflow_.empty() ? Time::max() : Time::ps(overflow_.front().due);
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
  const Time due = next_due();
  if (due >= armed_) return;
  armed_ = due;
  const Time k = kernel_now();
  ++g_notifications;
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
    if (run_.empty() && soon_.empty() && !load_next(limit)) break;
    // The earlier of the run's next and soon_'s (items pushed into this bucket while served).
    const bool soon = !soon_.empty() && (run_.empty() || before(soon_.front(), run_.back()));
    const Node top = soon ? soon_.front() : run_.back();
    if (top.due > limit.as_ps()) break;
    // What the items a little further on will touch, on its way into the cache while this
    // one is served (a big pod's state is far bigger than the host's caches).
    if (run_.size() > kFetchAhead) {
      const Node& n = run_[run_.size() - 1 - kFetchAhead];
      if (const QueueBase::Prefetch fn = queues_[n.rank].prefetch) fn(slots_[n.slot].item.b);
    }
    if (soon) {
      std::pop_heap(soon_.begin(), soon_.end(),
                    [this](const Node& x, const Node& y) { return later(x, y); });
      soon_.pop_back();
    } else {
      run_.pop_back();
    }
    --pending_;
    const QueueBase::ItemBytes item = slots_[top.slot].item;
    free_slots_.push_back(top.slot);
    kernel_detail::dispatch_now = Time::ps(top.due);
    ++counters_.serves;
    if (QueueBase* q = queues_[top.rank].queue) q->serve(item.b);
    if (kernel_detail::kernel_touched) {  // a SystemC event now due: do not pass it
      kernel_detail::kernel_touched = false;
      limit = bound(k);
    }
  }
  kernel_detail::dispatching = false;
  running_ = false;
  arm();
}

Time Dispatcher::kernel_next() {
  // Its own wake-up, taken out while the kernel is asked, then set again.
  if (armed_ != Time::max()) {
    ev_.cancel();
    armed_ = Time::max();
  }
  Time next = Time::max();
  if (sc_core::sc_pending_activity()) {
    const sc_core::sc_time ahead = sc_core::sc_time_to_pending_activity();
    const Time k = kernel_now();
    if (from_sc(ahead) < Time::max() - k) next = k + from_sc(ahead);
  }
  arm();
  return next;
}

void Dispatcher::run_for(Time duration) {
  horizon_ = kernel_now() + duration;
  has_horizon_ = true;
  sc_core::sc_start(to_sc(duration));
  has_horizon_ = false;
}

}  // namespace podsim
