// Timed work for the hot path, and the dispatcher that serves it: the pod's event queue.
//
// Every module keeps its pending work in TimedQueues: items due at a time, each served by the
// module's handler. A Dispatcher (a module the pod owns, "pod.events"; every queue is given it
// by reference and a name, its owner's hierarchical name and what it holds) holds every
// queue's items (in a calendar of 1.024 ns buckets, below) and serves them from one SystemC
// process, in this order (the ordering contract):
//   1. earlier due time first;
//   2. at the same time, the queue whose name comes first, in natural order (digit runs
//      compared as numbers: pod.gpu2 before pod.gpu10; the same number with fewer leading
//      zeros first). Queues are ranked when the simulation starts (items pushed before are
//      renumbered); queues created after it come after all others, in creation order;
//   3. within a queue, the smaller order key first (packets pass their access ID);
//   4. then the item pushed first.
// So work at the same simulated time happens in an order that depends on the model alone:
// never on SystemC's scheduling of processes (a replayed trace gives identical results), nor
// on the order modules or their members are declared or built (names decide), nor on which
// part of a pod a process simulates.
//
// Running ahead. The SystemC kernel is needed only when something other than queued work must
// happen (a SystemC thread or method waking: a scenario step, the pod's control thread). While
// the kernel has nothing due before the dispatcher's next item, the dispatcher serves that
// item at once, at its own time, without a trip through the kernel: sim_now() is then the
// dispatcher's time, ahead of sc_time_stamp(). Two rules keep that exact:
//  - it never passes the kernel's next pending activity, nor the end of the current run
//    (run_for sets it; a bare sc_start lets the dispatcher serve only the kernel's current
//    time, as a plain SystemC process would);
//  - code it runs notifies SystemC events only through podsim::notify_event (sc.hpp), which places
//    the notification at the dispatcher's time, not the kernel's.
// A served item costs no SystemC event: a push files a 16-byte node in its time's bucket, a
// serve takes the next node of the bucket being served (sorted when it is reached); pushing
// allocates nothing once the calendar has grown to its working size.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "sim/kernel/sc.hpp"

namespace podsim {

// Deterministic counts of the kernel's work (for benchmarks and the speed guard in CI).
struct KernelCounters {
  std::uint64_t serves = 0;       // queue items (and wake-ups) served
  std::uint64_t activations = 0;  // times the SystemC kernel ran the dispatcher
  // SystemC event notifications in the process (the dispatcher's own, and every notify_event).
  std::uint64_t notifications = 0;
};

class Dispatcher;

class QueueBase {
 public:
  virtual ~QueueBase();
  QueueBase(const QueueBase&) = delete;
  QueueBase& operator=(const QueueBase&) = delete;
  const std::string& name() const;

 protected:
  // `name`: unique in the pod (the owner's hierarchical name, then what the queue holds).
  QueueBase(Dispatcher& dispatcher, std::string name);
  friend class Dispatcher;
  static constexpr std::size_t kInlineBytes = 16;
  struct ItemBytes {
    alignas(8) unsigned char b[kInlineBytes];
  };
  // Serves one item (the bytes it was pushed with), due now.
  virtual void serve(const unsigned char* item) = 0;
  void push_raw(Time due, std::uint64_t key, const ItemBytes& item);
  // Throws std::logic_error if this queue's dispatcher is gone (before anything changes).
  void check_alive() const {
    if (__builtin_expect(dispatcher_ == nullptr, 0)) outlived();
  }
  [[noreturn]] static void outlived();
  Dispatcher* dispatcher_;  // none once the dispatcher is gone
  std::uint32_t rank_ = 0;  // the tie-break between queues (see the ordering contract)
  // Split runs: which of the dispatcher's lookaheads is its (Dispatcher::set_lookahead: 0 the
  // default, i the i-th set; in what would be padding).
  std::uint32_t lookahead_ = 0;

  // Fetching ahead (a hint to the host's caches; it never changes what is served or when):
  // the dispatcher calls `fn` with an item's bytes a dozen items before it serves it, so that
  // what the item points to (its packet) is on its way into the cache by then.
  using Prefetch = void (*)(const unsigned char* item);
  void set_prefetch(Prefetch fn);
};

class Dispatcher final : public sc_core::sc_module {
 public:
  explicit Dispatcher(sc_core::sc_module_name name = "events");
  ~Dispatcher() override;
  // The dispatcher's serves and activations, and the process's SystemC notifications.
  KernelCounters counters() const;
  // Items waiting, all queues.
  std::size_t pending() const { return pending_; }

  // The earliest due time waiting (Time::max(): nothing).
  Time next_due() const;

  // For a pod split over ranks (docs/parallel.md, "Lookahead"). A queue's lookahead bounds
  // from below the simulated time from serving one of its items to the first thing that
  // serving makes happen on another rank, directly or through what it pushes. `prefix`, a
  // component's hierarchical name and a dot, gives `t` to every queue whose name starts with
  // it, made before or after; other queues have the default.
  void set_lookahead(const std::string& prefix, Time t);
  void set_default_lookahead(Time t);
  // The earliest time anything waiting can make something happen on another rank: the least,
  // over the items waiting, of due time plus their queue's lookahead (Time::max(): none, or
  // past Time::max()).
  Time next_effect() const;
  // While set (a partition delivering what other ranks sent), pushing an item due at or
  // before `floor` throws std::logic_error: it would belong to a window this rank has already
  // simulated. Time::max() turns the check off (the default).
  void set_due_floor(Time floor) { due_floor_ = floor == Time::max() ? Time::ps(-1) : floor; }
  // When the SystemC kernel next has something to do other than wake this dispatcher (a
  // process or event of its own: a scenario step, a thread's timed wait); Time::max(): nothing.
  // Between runs only.
  Time kernel_next();
  // Runs the simulation for `duration` with the dispatcher allowed to run ahead up to its end
  // (sc_start for podsim: use it instead of a bare sc_start).
  void run_for(Time duration);
  // The queues in the contract's order (by name; see above) once the simulation has started;
  // before, in creation order.
  std::vector<std::string> queue_order() const;

 private:
  friend class QueueBase;
  void start_of_simulation() override { freeze(); }
  std::uint32_t add(QueueBase* q, std::string name);
  void remove(const QueueBase* q);
  // Ranks the queues by name and renumbers items already pushed (at the simulation's start).
  void freeze();
  // The common case inline (a slot free, the item's bucket in the window with room in its
  // newest chunk, the dispatcher serving); everything else in push_slow.
  void push(Time due, const QueueBase& q, std::uint64_t key, const QueueBase::ItemBytes& item) {
    const std::int64_t b = bucket_of(due.as_ps());
    if (running_ && !free_slots_.empty() && b > current_ &&
        b < current_ + static_cast<std::int64_t>(kBuckets)) {
      const std::uint32_t head = buckets_[static_cast<std::size_t>(b) & (kBuckets - 1)];
      if (head != kNoChunk && chunks_[head].count < Chunk::kNodes) {
        const std::uint32_t slot = free_slots_.back();
        free_slots_.pop_back();
        slots_[slot] = Slot{key, seq_++, item};
        ++pending_;
        Chunk& chunk = chunks_[head];  // not empty: its bucket's bit is set
        chunk.nodes[chunk.count++] = Node{due.as_ps(), q.rank_, slot};
        return;
      }
    }
    push_slow(due, q, key, item);
  }
  void push_slow(Time due, const QueueBase& q, std::uint64_t key, const QueueBase::ItemBytes& item);
  void run();
  void arm();
  // How many items before serving one the dispatcher fetches what it points to (QueueBase::
  // set_prefetch): far enough for a load from memory to arrive, near enough for the line to
  // still be cached (measured: 8 and 12 alike on a 72-GPU pod under Poisson load, 24 worse
  // than 12 on a 1,024-GPU pod in closed loop;
  // fetching also what serving nearer items would touch, their TLB sets, histogram buckets
  // and egress queues, was tried and only added work).
  static constexpr std::size_t kFetchAhead = 12;
  Time bound(Time kernel) const;

  // The items are kept in a calendar: buckets of 2^kBucketShift ps over a window of
  // kBuckets buckets from the bucket being served (each a list of chunks of small nodes from
  // one pool, with a bit saying it is not empty; the items themselves wait in slots), and a
  // heap for items due beyond the window (moved into the calendar as the window reaches them). The
  // bucket being served is taken out whole and sorted into the contract's order (the run), its
  // items' slots fetched ahead; items pushed into it while it is served wait in a heap beside
  // the run (`soon_`), and the earlier of the two fronts is served next: the same order as one
  // sorted run, without moving the run for every such push (a big pod's buckets hold hundreds
  // of items). A push or a pop costs a few dozen instructions, whatever the number of items
  // waiting.
  static constexpr unsigned kBucketShift = 10;                   // 1.024 ns
  static constexpr std::size_t kBuckets = std::size_t{1} << 14;  // a window of 16.8 us
  struct Node {
    std::int64_t due;
    std::uint32_t rank;
    std::uint32_t slot;
  };
  // 32 bytes, aligned to them: a slot is never split across two cache lines (the one fetched
  // ahead and another).
  struct alignas(32) Slot {
    std::uint64_t key;
    std::uint64_t seq;
    QueueBase::ItemBytes item;
  };
  static_assert(sizeof(Slot) == 32);
  // The contract's order (the run holds it reversed: the next item at its back).
  bool before(const Node& a, const Node& b) const {
    if (a.due != b.due) return a.due < b.due;
    if (a.rank != b.rank) return a.rank < b.rank;
    const Slot& x = slots_[a.slot];
    const Slot& y = slots_[b.slot];
    if (x.key != y.key) return x.key < y.key;
    return x.seq < y.seq;
  }
  // The run's order: the next item last (as a heap's comparison: the heap's front is served
  // first).
  bool later(const Node& a, const Node& b) const { return before(b, a); }
  // [first, last) of a run into its order (for a handful of items).
  void insertion_sort(Node* first, Node* last) const;
  static std::int64_t bucket_of(std::int64_t due) { return due >> kBucketShift; }
  void file(const Node& n);  // into soon_, the calendar or the overflow heap
  // The next non-empty bucket of the calendar after the current one (-1: none).
  std::int64_t next_bucket() const { return next_bucket_after(current_); }
  // The next non-empty bucket of the calendar after bucket `b` (>= current_; -1: none).
  std::int64_t next_bucket_after(std::int64_t b) const;
  std::int64_t lookahead_of(std::uint32_t rank) const {
    const QueueBase* q = queues_[rank].queue;
    return q && q->lookahead_ > 0 ? lookaheads_[q->lookahead_ - 1].second : default_lookahead_;
  }
  [[noreturn]] void due_in_the_past(Time due, const QueueBase& q) const;
  // Loads the next non-empty bucket (calendar or overflow), if it is not past `limit`, into
  // the run.
  bool load_next(Time limit);
  void sort_large_run();

  // Four whole cache lines.
  struct alignas(64) Chunk {
    static constexpr std::uint32_t kNodes = 15;
    Node nodes[kNodes];
    std::uint32_t count;
    std::uint32_t next;  // the bucket's next (older) chunk
  };
  static_assert(sizeof(Chunk) == 256);
  static constexpr std::uint32_t kNoChunk = UINT32_MAX;
  std::uint32_t new_chunk();
  std::vector<std::uint32_t> buckets_;  // by position (bucket % kBuckets): newest chunk
  std::vector<Chunk> chunks_;           // the pool; it grows to the working size and stays
  std::vector<std::uint32_t> free_chunks_;
  std::vector<std::uint64_t> bits_;  // per position: not empty
  std::int64_t current_ = 0;         // the bucket being (or last) served
  std::vector<Node> run_;            // its items, the next at the back
  std::vector<Node> soon_;           // pushed into it while served: a heap by later()
  // sort_large_run's scratch: items per bin of the bucket, the sorted run.
  std::vector<std::uint32_t> due_counts_ =
      std::vector<std::uint32_t>(std::size_t{1} << kBucketShift);
  std::vector<Node> sorted_;
  std::vector<Node> overflow_;  // a min-heap by due of items beyond the window
  std::vector<Slot> slots_;
  std::vector<std::uint32_t> free_slots_;
  // By rank (before freeze: by creation): the queue (nullptr: gone) and how its items are
  // fetched ahead (nullptr: not), side by side, so that fetching an item ahead also brings in
  // what serving it reads first.
  struct QueueEntry {
    QueueBase* queue = nullptr;
    QueueBase::Prefetch prefetch = nullptr;
  };
  std::vector<QueueEntry> queues_;
  std::vector<std::string> names_;  // theirs (kept here: a queue stays small)
  std::unordered_set<std::string> taken_;
  bool frozen_ = false;
  // Lookaheads (set_lookahead): by name prefix, and the default.
  std::vector<std::pair<std::string, std::int64_t>> lookaheads_;
  std::int64_t default_lookahead_ = 0;
  std::int64_t min_lookahead_ = 0;  // the least of all of them
  Time due_floor_ = Time::ps(-1);   // set_due_floor (below every due time: no check)
  std::size_t pending_ = 0;
  std::uint64_t seq_ = 0;
  sc_core::sc_event ev_;
  Time armed_ = Time::max();  // when ev_ is due (max: not armed)
  Time horizon_;  // the latest time it may serve in the current run (none: the kernel's)
  bool has_horizon_ = false;
  bool running_ = false;
  KernelCounters counters_;
};

inline void QueueBase::push_raw(Time due, std::uint64_t key, const ItemBytes& item) {
  dispatcher_->push(due, *this, key, item);
}

// A queue's name: its owner's hierarchical name, then what it holds ("pod.gpu3.vram.arrivals").
inline std::string queue_name(const sc_core::sc_object& owner, const char* what) {
  return std::string(owner.name()) + "." + what;
}

template <class Item>
class TimedQueue final : public QueueBase {
  // Small trivially copyable items (a packet pointer and a port) live in the dispatcher's own
  // storage; others (closures) in this queue's, by index.
  static constexpr bool kInline =
      std::is_trivially_copyable_v<Item> && sizeof(Item) <= kInlineBytes;

 public:
  using Handler = std::function<void(Item&)>;
  TimedQueue(Dispatcher& dispatcher, std::string name, Handler handler, std::size_t reserve = 0)
      : QueueBase(dispatcher, std::move(name)), handler_(std::move(handler)) {
    if constexpr (!kInline) store_.reserve(reserve);
  }

  bool empty() const { return count_ == 0; }
  std::size_t size() const { return count_; }

  // Fetching ahead for this queue's items (QueueBase::set_prefetch): `Fetch(item)` starts
  // loading what serving the item will read through it (prefetch_packet_item for packets).
  // Only for items kept in the dispatcher's storage.
  template <void (*Fetch)(const Item&)>
  void fetch_ahead() {
    static_assert(kInline, "fetching ahead needs items kept in the dispatcher's storage");
    set_prefetch([](const unsigned char* b) { Fetch(load(b)); });
  }

  // Queues `item` for simulated time `due` (>= now). Items due at the same time are served in
  // order of `key` (packets pass their access ID: an order the model fixes), then of arrival.
  void push(Time due, Item item, std::uint64_t key = 0) {
    check_alive();
    ++count_;
    ItemBytes bytes{};
    if constexpr (kInline) {
      std::memcpy(bytes.b, static_cast<const void*>(&item), sizeof(Item));
      push_raw(due, key, bytes);
    } else {
      std::uint32_t idx;
      if (free_.empty()) {
        idx = static_cast<std::uint32_t>(store_.size());
        store_.push_back(std::move(item));
      } else {
        idx = free_.back();
        free_.pop_back();
        store_[idx] = std::move(item);
      }
      std::memcpy(bytes.b, &idx, sizeof idx);
      push_raw(due, key, bytes);
    }
  }

 private:
  static Item load(const unsigned char* bytes) {
    Item item;
    std::memcpy(static_cast<void*>(&item), bytes, sizeof(Item));
    return item;
  }
  void serve(const unsigned char* bytes) override {
    --count_;
    if constexpr (kInline) {
      Item item;
      std::memcpy(static_cast<void*>(&item), bytes, sizeof(Item));
      handler_(item);
    } else {
      std::uint32_t idx;
      std::memcpy(&idx, bytes, sizeof idx);
      Item item = std::move(store_[idx]);
      store_[idx] = Item{};
      free_.push_back(idx);
      handler_(item);
    }
  }

  Handler handler_;
  std::size_t count_ = 0;
  std::vector<Item> store_;  // non-inline items, by index
  std::vector<std::uint32_t> free_;
};

// A wake-up at a time: `at(t)` asks for `fn` to run at t (the earliest asked for wins; a
// wake-up asked for while one is pending earlier is covered by it).
class Timer final : public QueueBase {
 public:
  Timer(Dispatcher& dispatcher, std::string name, std::function<void()> fn)
      : QueueBase(dispatcher, std::move(name)), fn_(std::move(fn)) {}
  void at(Time t) {
    check_alive();
    if (t >= pending_) return;
    pending_ = t;
    push_raw(t, 0, ItemBytes{});
  }

 private:
  void serve(const unsigned char*) override {
    if (sim_now() < pending_) return;  // superseded by a later request
    pending_ = Time::max();
    fn_();
  }
  std::function<void()> fn_;
  Time pending_ = Time::max();
};

}  // namespace podsim
