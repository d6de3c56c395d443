// The dispatcher's ordering contract (sim/kernel/timed_queue.hpp): earlier due time first, then
// the queue whose name comes first (natural order), then the smaller order key, then the item
// pushed first, for small buckets and for big ones (hundreds of items within one nanosecond, as
// under heavy load in a big pod), including items pushed while their bucket is being served,
// items pushed before the simulation starts, and crowds of items due at one picosecond.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "sim/kernel/timed_queue.hpp"
#include "tests/support/in_process_pod.hpp"

using namespace podsim;

namespace {

struct Item {
  std::uint32_t id;
};

// What was served: (time in ps, queue, item id).
using Served = std::tuple<std::int64_t, int, std::uint32_t>;

// A pending item in the reference model: the contract's order is the tuple's order.
struct Ref {
  std::int64_t due;
  int queue;
  std::uint64_t key;
  std::uint64_t seq;
  std::uint32_t id;
  bool operator<(const Ref& o) const {
    return std::tie(due, queue, key, seq) < std::tie(o.due, o.queue, o.key, o.seq);
  }
};

constexpr int kQueues = 4;

// An item served may push a follow-up: into the next queue, 0-6 ps later (often into the
// bucket being served), with key id % 3. The same rule drives the model and the reference.
bool follows(std::uint32_t id) {
  return id % 5 == 0 && id < 100000;
}
Ref follow_up(const Ref& r, std::uint64_t seq) {
  return Ref{r.due + r.id % 7, (r.queue + 1) % kQueues, r.id % 3, seq, r.id + 100000};
}

std::vector<Served> reference(std::vector<Ref> initial) {
  std::set<Ref> pending(initial.begin(), initial.end());
  std::uint64_t seq = initial.size();
  std::vector<Served> out;
  while (!pending.empty()) {
    const Ref r = *pending.begin();
    pending.erase(pending.begin());
    out.emplace_back(r.due, r.queue, r.id);
    if (follows(r.id)) pending.insert(follow_up(r, seq++));
  }
  return out;
}

}  // namespace

TEST_CASE(
    "the dispatcher serves in the contract's order, in small buckets and in buckets of "
    "hundreds of items, with items pushed while their bucket is served",
    "[kernel][dispatcher]") {
  std::vector<Served> served;
  Dispatcher events("events");
  std::array<std::unique_ptr<TimedQueue<Item>>, kQueues> queues;
  // Created in the reverse of their names' order: names decide the order, not creation.
  for (int q = kQueues; q-- > 0;)
    queues[static_cast<std::size_t>(q)] =
        std::make_unique<TimedQueue<Item>>(events, "bench.q" + std::to_string(q), [&, q](Item& it) {
          served.emplace_back(sim_now().as_ps(), q, it.id);
          if (follows(it.id)) {
            const Ref r{sim_now().as_ps(), q, 0, 0, it.id};
            const Ref f = follow_up(r, 0);
            queues[static_cast<std::size_t>(f.queue)]->push(Time::ps(f.due), Item{f.id}, f.key);
          }
        });

  // Buckets are 1.024 ns: 1,500 items within [10 ns, 11 ns) (a big bucket, many ties in
  // time and queue), 20 within [50 ns, 51 ns) (a small one), and 300 spread over 40 us
  // (beyond the calendar's window: the overflow heap).
  std::mt19937_64 rng(7);
  std::vector<Ref> initial;
  auto add = [&](std::int64_t due) {
    const auto id = static_cast<std::uint32_t>(initial.size());
    const int q = static_cast<int>(rng() % kQueues);
    const std::uint64_t key = rng() % 4;
    initial.push_back(Ref{due, q, key, initial.size(), id});
  };
  for (int i = 0; i < 1500; ++i)
    add(10240 + static_cast<std::int64_t>(rng() % 60));  // few distinct times: many ties
  for (int i = 0; i < 20; ++i)
    add(51200 + static_cast<std::int64_t>(rng() % 1000));
  for (int i = 0; i < 300; ++i)
    add(100000 + static_cast<std::int64_t>(rng() % 40000000));
  for (const Ref& r : initial)
    queues[static_cast<std::size_t>(r.queue)]->push(Time::ps(r.due), Item{r.id}, r.key);

  events.run_for(Time::us(100));

  const std::vector<Served> expected = reference(initial);
  REQUIRE(served.size() == expected.size());
  REQUIRE(served.size() > initial.size() + 300);  // follow-ups were pushed and served
  for (std::size_t i = 0; i < served.size(); ++i) {
    INFO("item " << i << " served");
    REQUIRE(served[i] == expected[i]);
  }
}

TEST_CASE(
    "queues at the same time are served in their names' natural order, whatever order they "
    "were created in, and two queues may not share a name",
    "[kernel][dispatcher]") {
  Dispatcher events("events");
  std::vector<std::string> served;
  std::vector<std::unique_ptr<TimedQueue<Item>>> queues;
  for (const char* name : {"pod.gpu10.vram.arrivals", "pod.gpu2.vram.arrivals",
                           "pod.fabric.plane0.switch0.arrivals", "pod.gpu2.agent.completions"})
    queues.push_back(std::make_unique<TimedQueue<Item>>(
        events, name, [&served, name](Item&) { served.emplace_back(name); }));
  CHECK_THROWS_WITH(TimedQueue<Item>(events, "pod.gpu2.vram.arrivals", [](Item&) {}),
                    Catch::Contains("two event queues named pod.gpu2.vram.arrivals"));
  for (auto& q : queues)
    q->push(Time::ns(5), Item{0});
  events.run_for(Time::us(1));
  const std::vector<std::string> expected{"pod.fabric.plane0.switch0.arrivals",
                                          "pod.gpu2.agent.completions", "pod.gpu2.vram.arrivals",
                                          "pod.gpu10.vram.arrivals"};
  CHECK(served == expected);
  CHECK(events.queue_order() == expected);
}

namespace {
// Natural order, written independently of the dispatcher's: split into digit and non-digit
// runs; digit runs compare as numbers.
std::vector<std::pair<bool, std::string>> runs(const std::string& s) {
  std::vector<std::pair<bool, std::string>> out;
  for (char c : s) {
    const bool digit = c >= '0' && c <= '9';
    if (out.empty() || out.back().first != digit) out.push_back({digit, ""});
    out.back().second += c;
  }
  return out;
}
bool natural(const std::string& a, const std::string& b) {
  const auto x = runs(a), y = runs(b);
  for (std::size_t i = 0; i < x.size() && i < y.size(); ++i) {
    if (x[i].first && y[i].first) {
      const auto u = std::stoull(x[i].second), v = std::stoull(y[i].second);
      if (u != v) return u < v;
    } else if (x[i].second != y[i].second) {
      return x[i].second < y[i].second;
    }
  }
  return x.size() < y.size();
}
}  // namespace

TEST_CASE("the pod owns its event queue: pod.events, with every module's queues in name order",
          "[kernel][dispatcher][pod]") {
  // 12 GPUs: gpu10 and gpu11 sort after gpu9 only in natural order; within a GPU, names and
  // creation order differ (VRAM is built first, the agent's queues sort first).
  Pod pod("pod", test::config_with({"pod.gpus=12"}));
  CHECK(dynamic_cast<Dispatcher*>(sc_core::sc_find_object("pod.events")) == &pod.events());
  CHECK(sc_core::sc_find_object("pod.events.dispatch") != nullptr);
  pod.run();
  REQUIRE(pod.ok());
  const std::vector<std::string> order = pod.events().queue_order();
  REQUIRE(order.size() > 12 * 10);
  for (const char* q : {"pod.gpu0.vram.arrivals", "pod.gpu11.npa_mmu.arrivals",
                        "pod.gpu1.port0.tx_queue", "pod.fabric.plane0.switch0.arrivals"})
    CHECK(std::find(order.begin(), order.end(), q) != order.end());
  std::vector<std::string> sorted = order;
  std::sort(sorted.begin(), sorted.end(), natural);
  CHECK(order == sorted);
}

TEST_CASE(
    "items pushed before the simulation starts follow the names' order, not the order the "
    "queues were built in, and those of a queue gone before the start are dropped",
    "[kernel][dispatcher]") {
  Dispatcher events("events");
  std::vector<std::pair<std::string, std::uint32_t>> served;  // (queue, item)
  auto record = [&](const char* name) {
    return [&served, name](Item& it) { served.emplace_back(name, it.id); };
  };
  TimedQueue<Item> b(events, "x.b", record("x.b"));
  b.push(Time::ps(500), Item{1});  // in the first bucket: waits in the run being built
  b.push(Time::ns(5), Item{2});    // while modules are still being built
  auto gone = std::make_unique<TimedQueue<Item>>(events, "x.0", record("x.0"));
  gone->push(Time::ps(500), Item{3});
  gone->push(Time::ns(5), Item{4});
  gone.reset();  // its items must not reach another queue
  TimedQueue<Item> a(events, "x.a", record("x.a"));
  a.push(Time::ps(500), Item{5});
  a.push(Time::ns(5), Item{6});
  b.push(Time::us(30), Item{7});  // beyond the calendar's window
  a.push(Time::us(30), Item{8});
  events.run_for(Time::us(40));
  const std::vector<std::pair<std::string, std::uint32_t>> expected{
      {"x.a", 5}, {"x.b", 1}, {"x.a", 6}, {"x.b", 2}, {"x.a", 8}, {"x.b", 7}};
  CHECK(served == expected);
  CHECK(a.size() == 0);
  CHECK(b.size() == 0);
}

TEST_CASE("a queue used after its dispatcher is gone throws and is left as it was",
          "[kernel][dispatcher]") {
  auto events = std::make_unique<Dispatcher>("events");
  TimedQueue<Item> q(*events, "x.q", [](Item&) {});
  Timer timer(*events, "x.timer", [] {});
  events.reset();
  CHECK_THROWS_WITH(q.push(Time::ns(1), Item{0}), Catch::Contains("after its dispatcher"));
  CHECK(q.size() == 0);
  CHECK_THROWS_WITH(timer.at(Time::ns(1)), Catch::Contains("after its dispatcher"));
  CHECK_THROWS(q.name());
}

namespace {
// `n` queues crowd.q0 ... that record what they serve as (queue, item) in `served`.
std::vector<std::unique_ptr<TimedQueue<Item>>> crowd_queues(
    Dispatcher& events, int n, std::vector<std::pair<int, std::uint32_t>>& served) {
  std::vector<std::unique_ptr<TimedQueue<Item>>> queues;
  for (int q = 0; q < n; ++q)
    queues.push_back(std::make_unique<TimedQueue<Item>>(
        events, "crowd.q" + std::to_string(q),
        [&served, q](Item& it) { served.emplace_back(q, it.id); }));
  return queues;
}
// What `served` holds is every item pushed (`refs`), in the contract's order.
void check_served_in_order(const std::vector<std::pair<int, std::uint32_t>>& served,
                           std::vector<Ref> refs) {
  std::sort(refs.begin(), refs.end());  // by (due, queue, key, push order)
  REQUIRE(served.size() == refs.size());
  for (std::size_t i = 0; i < refs.size(); ++i) {
    INFO("item " << i << " (due at " << refs[i].due << " ps)");
    REQUIRE(served[i] == std::make_pair(refs[i].queue, refs[i].id));
  }
}
}  // namespace

TEST_CASE("a crowd of items due at the same picosecond is served in the contract's order",
          "[kernel][dispatcher]") {
  Dispatcher events("events");
  std::vector<std::pair<int, std::uint32_t>> served;  // (queue, item)
  const auto queues = crowd_queues(events, 100, served);
  std::vector<Ref> refs;
  std::uint32_t id = 0;
  for (int round = 0; round < 200; ++round)  // 20,000 items, round robin over the queues
    for (int q = 99; q >= 0; --q) {
      const std::uint64_t key = (id * 7919u) % 13;
      queues[static_cast<std::size_t>(q)]->push(Time::ns(3), Item{id}, key);
      refs.push_back(Ref{3000, q, key, id, id});
      ++id;
    }
  events.run_for(Time::us(1));
  check_served_in_order(served, refs);
}

TEST_CASE(
    "crowds pushed already in the contract's order, in its reverse or shuffled are served in "
    "its order",
    "[kernel][dispatcher]") {
  // A bucket is sorted from the reverse of its push order, and a crowd found already in order
  // is not sorted again: each way in, for crowds from a handful to thousands, over queues and
  // keys that tie. Each crowd is due at its own time, all within the calendar's window.
  Dispatcher events("events");
  std::vector<std::pair<int, std::uint32_t>> served;  // (queue, item)
  const auto queues = crowd_queues(events, 8, served);
  std::vector<Ref> pushes;
  // Pushes `items` (given in the contract's order) as `how` says: as they are, reversed or
  // shuffled.
  auto push_as = [&](const std::string& how, std::vector<Ref> items, unsigned seed) {
    if (how == "reversed") std::reverse(items.begin(), items.end());
    if (how == "shuffled") std::shuffle(items.begin(), items.end(), std::mt19937(seed));
    for (Ref& r : items) {
      r.seq = pushes.size();
      queues[static_cast<std::size_t>(r.queue)]->push(Time::ps(r.due), Item{r.id}, r.key);
      pushes.push_back(r);
    }
  };
  std::uint32_t id = 0;
  std::int64_t due = 2500;
  for (const int size : {5, 17, 40, 300, 5000})
    for (const std::string how : {"in order", "reversed", "shuffled"}) {
      // The crowd in the contract's order: by queue, then key (two items share each key, and
      // go by push order).
      std::vector<Ref> crowd;
      for (int i = 0; i < size; ++i)
        crowd.push_back(Ref{due, i * 8 / size, static_cast<std::uint64_t>(i / 2), 0, id++});
      push_as(how, crowd, static_cast<unsigned>(size));
      due += 500000;  // the next crowd 500 ns later
    }
  // A bucket of 37 items (sorted as a big one, in 64 bins of 16 ps): a crowd of 17 at its
  // first picosecond (one bin, just over what is insertion-sorted in a bin), and 20 items
  // spread over the rest of its nanosecond, two per bin 5 ps apart; pushed in order, reversed
  // and shuffled.
  for (const std::string how : {"in order", "reversed", "shuffled"}) {
    due = (due / 1024 + 1) * 1024;  // a bucket's first picosecond
    std::vector<Ref> bucket;
    for (int i = 0; i < 17; ++i)
      bucket.push_back(Ref{due, i % 8, static_cast<std::uint64_t>(i), 0, id++});
    for (int i = 0; i < 20; ++i)
      bucket.push_back(Ref{due + 16 + i / 2 * 64 + i % 2 * 5, i % 3, 0, 0, id++});
    std::sort(bucket.begin(), bucket.end());
    push_as(how, bucket, 37);
    due += 500000;
  }
  events.run_for(Time::us(10));
  check_served_in_order(served, pushes);
}

TEST_CASE(
    "the earliest effect of what waits is each item's due time plus its queue's lookahead, "
    "wherever the item waits",
    "[kernel][dispatcher][partition]") {
  // Queues of two "GPUs" (gpu1 must not take gpu10's lookahead: a prefix ends with a dot), a
  // "switch", and one with the default; one more made after the lookaheads were set. Items
  // over 60 us: in the bucket being served when a run stops inside it, in the calendar's
  // window, and beyond it (the overflow heap). After each of many short runs, next_effect
  // must be the least due + lookahead of what has not been served.
  Dispatcher events("events");
  std::vector<std::unique_ptr<TimedQueue<Item>>> queues;
  std::set<std::uint32_t> served;
  auto make = [&](const std::string& name) {
    queues.push_back(std::make_unique<TimedQueue<Item>>(
        events, name, [&served](Item& it) { served.insert(it.id); }));
  };
  for (const char* name : {"pod.gpu1.a", "pod.gpu10.b", "pod.fabric.switch0.c", "pod.host_net"})
    make(name);
  events.set_default_lookahead(Time::ps(66000));
  events.set_lookahead("pod.gpu1.", Time::ps(160000));
  events.set_lookahead("pod.gpu10.", Time::ps(900000));
  events.set_lookahead("pod.fabric.switch0.", Time::ps(70000));
  make("pod.gpu1.late");  // made after: takes gpu1's
  const std::array<std::int64_t, 5> lookahead{160000, 900000, 70000, 66000, 160000};

  struct Pending {
    std::int64_t due;
    std::size_t queue;
    std::uint32_t id;
  };
  std::vector<Pending> items;
  std::mt19937_64 rng(11);
  for (std::uint32_t id = 0; id < 3000; ++id) {
    const std::size_t q = rng() % queues.size();
    // Crowded in places (many items in a few buckets), sparse in others.
    const std::int64_t due = id % 3 == 0 ? 5000 + static_cast<std::int64_t>(rng() % 4000)
                                         : 1000 + static_cast<std::int64_t>(rng() % 60000000);
    queues[q]->push(Time::ps(due), Item{id});
    items.push_back({due, q, id});
  }
  auto expected = [&] {
    std::int64_t best = INT64_MAX;
    for (const Pending& p : items)
      if (!served.count(p.id)) best = std::min(best, p.due + lookahead[p.queue]);
    return best == INT64_MAX ? Time::max() : Time::ps(best);
  };
  CHECK(events.next_effect() == expected());
  int checks = 0;
  while (served.size() < items.size()) {
    // Runs end at odd picoseconds: often inside a bucket that holds items due after it.
    events.run_for(Time::ps(200 + static_cast<std::int64_t>(rng() % 700000)));
    INFO("at " << sim_now().as_ps() << " ps, " << served.size() << " served");
    REQUIRE(events.next_effect() == expected());
    ++checks;
  }
  CHECK(checks > 50);
  CHECK(events.next_effect() == Time::max());
}

TEST_CASE("while a floor is set an item due at or before it is refused, and nothing else is",
          "[kernel][dispatcher][partition]") {
  Dispatcher events("events");
  std::vector<std::uint32_t> served;
  TimedQueue<Item> q(events, "pod.gpu0.q", [&served](Item& it) { served.push_back(it.id); });
  events.run_for(Time::ns(10));
  events.set_due_floor(sim_now());
  CHECK_THROWS_WITH(q.push(sim_now(), Item{1}),
                    Catch::Contains("pod.gpu0.q") && Catch::Contains("already simulated"));
  CHECK_THROWS_WITH(q.push(Time::ns(3), Item{2}), Catch::Contains("already simulated"));
  CHECK(events.pending() == 0);
  q.push(sim_now() + Time::ps(1), Item{3});
  events.set_due_floor(Time::max());
  q.push(sim_now(), Item{4});
  events.run_for(Time::ns(1));
  CHECK(served == std::vector<std::uint32_t>{4, 3});
}

TEST_CASE(
    "the earliest effect counts items left in the bucket being served, pushed into it while it "
    "was served, and beyond the calendar's window",
    "[kernel][dispatcher][partition]") {
  Dispatcher events("events");
  std::unique_ptr<TimedQueue<Item>> near;
  TimedQueue<Item> far(events, "pod.gpu10.far", [](Item&) {});
  TimedQueue<Item> sw(events, "pod.fabric.switch0.sw", [](Item&) {});
  // Serving item 1 (at 5,200 ps) pushes item 2 into the same 1.024 ns bucket, at 5,950 ps.
  near = std::make_unique<TimedQueue<Item>>(events, "pod.host_net", [&](Item& it) {
    if (it.id == 1) near->push(Time::ps(5950), Item{2});
  });
  events.set_default_lookahead(Time::ps(66000));
  events.set_lookahead("pod.gpu10.", Time::ps(900000));
  events.set_lookahead("pod.fabric.switch0.", Time::ps(70000));
  // Beyond the calendar's 16.8 us: the overflow heap's earliest item (the far queue's) is not
  // the earliest effect there.
  far.push(Time::us(30), Item{10});
  near->push(Time::ps(30500000), Item{11});
  CHECK(events.next_effect() == Time::ps(30566000));
  // In the bucket [5,120, 6,144) ps: item 1, and item 3 left in it when a run stops at 5,500.
  near->push(Time::ps(5200), Item{1});
  near->push(Time::ps(5900), Item{3});
  sw.push(Time::ps(7000), Item{4});  // the next bucket: 77,000
  events.run_for(Time::ps(5500));
  // Item 3 (left in the run) and item 2 (pushed while the bucket was served): 5,900 + 66,000.
  CHECK(events.next_effect() == Time::ps(71900));
  events.run_for(Time::ps(5925) - sim_now());
  CHECK(events.next_effect() == Time::ps(71950));  // item 2 alone in its bucket now
  events.run_for(Time::ps(6000) - sim_now());
  CHECK(events.next_effect() == Time::ps(77000));
}
