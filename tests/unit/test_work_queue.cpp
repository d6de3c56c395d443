// The driver's workers on their own: a work queue in FIFO order, one item handled at a time
// while its handler blocks, an idle worker woken by a post, a device reset dropping queued
// work, and when a worker is idle.
#include <catch2/catch.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "driver_model/work_queue.hpp"
#include "tests/unit/steps_scheduler.hpp"

using namespace podsim;
using namespace podsim::driver;

namespace {

using test::Steps;

using Log = std::vector<std::string>;

// A handler that notes when it starts and ends, and blocks on `gate` in between if told to.
Task<void> note(int item, Log& log, bool block, WaitQueue& gate, Scheduler& s) {
  log.push_back("start " + std::to_string(item));
  if (block) co_await gate.wait(s);
  log.push_back("end " + std::to_string(item));
}

// The handlers' log so far, and emptied.
Log take(Log& log) {
  return std::exchange(log, {});
}

}  // namespace

TEST_CASE("a worker takes its queue's items in the order they were posted",
          "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  q.post(1);  // before the worker starts
  q.post(2);
  CHECK(q.size() == 2);
  TaskRunner r;
  r.run(serve(q, s, [&](int i) { return note(i, log, false, gate, s); }));
  q.post(3);  // while it works
  s.run();
  CHECK(take(log) == Log{"start 1", "end 1", "start 2", "end 2", "start 3", "end 3"});
  q.post(4);  // once it waits
  q.post(5);
  s.run();
  CHECK(take(log) == Log{"start 4", "end 4", "start 5", "end 5"});
  CHECK(q.empty());
}

TEST_CASE("a worker handles one item at a time: a handler that blocks holds it, later items wait",
          "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  TaskRunner r;
  r.run(serve(q, s, [&](int i) { return note(i, log, true, gate, s); }));
  q.post(1);
  q.post(2);
  s.run();
  CHECK(take(log) == Log{"start 1"});
  CHECK(q.size() == 1);  // 2 waits for 1
  CHECK(gate.size() == 1);
  gate.wake_all();
  s.run();
  CHECK(take(log) == Log{"end 1", "start 2"});
  CHECK(q.empty());
  gate.wake_all();
  s.run();
  CHECK(take(log) == Log{"end 2"});
  CHECK(q.waiting() == 1);
}

TEST_CASE("an idle worker sleeps until a post wakes it, and runs after the poster's step",
          "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  TaskRunner r;
  r.run(serve(q, s, [&](int i) { return note(i, log, false, gate, s); }));
  s.run();
  CHECK(log.empty());
  CHECK(q.waiting() == 1);  // asleep on the queue
  CHECK(r.running() == 1);
  q.post(7);
  CHECK(log.empty());  // not yet: the poster's step goes on
  CHECK(q.waiting() == 0);
  s.run();
  CHECK(take(log) == Log{"start 7", "end 7"});
  CHECK(q.waiting() == 1);
}

TEST_CASE("a woken worker looks again: a queue emptied before it runs leaves it waiting",
          "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  TaskRunner r;
  r.run(serve(q, s, [&](int i) { return note(i, log, false, gate, s); }));
  r.run(serve(q, s, [&](int i) { return note(10 + i, log, false, gate, s); }));
  CHECK(q.waiting() == 2);
  q.post(1);  // wakes both: the first takes it, the second finds nothing and waits again
  s.run();
  CHECK(take(log) == Log{"start 1", "end 1"});
  CHECK(q.waiting() == 2);
  q.post(2);
  q.clear();  // woken, then emptied before the worker ran
  s.run();
  CHECK(log.empty());
  CHECK(q.waiting() == 2);
  q.post(3);
  s.run();
  CHECK(take(log) == Log{"start 3", "end 3"});
}

TEST_CASE(
    "a device reset drops the queued work, not the item being handled (the driver abandons it)",
    "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  {
    TaskRunner r;
    r.run(serve(q, s, [&](int i) { return note(i, log, true, gate, s); }));
    q.post(1);
    q.post(2);
    q.post(3);
    s.run();
    CHECK(take(log) == Log{"start 1"});
    q.clear();
    CHECK(q.empty());
    CHECK(q.size() == 0);
    gate.wake_all();
    s.run();
    CHECK(take(log) == Log{"end 1"});  // 2 and 3 are gone
    CHECK(q.waiting() == 1);

    // As the driver resets: its tasks are abandoned, the queue cleared, a fresh worker started.
    q.post(4);
    s.run();
    CHECK(take(log) == Log{"start 4"});
    q.post(5);
    r.cancel_all();
    q.clear();
    CHECK(gate.empty());  // the abandoned handler waits no more
    CHECK(q.waiting() == 0);
    r.run(serve(q, s, [&](int i) { return note(i, log, false, gate, s); }));
    CHECK(q.idle());
    q.post(6);
    s.run();
    CHECK(take(log) == Log{"start 6", "end 6"});
  }
  CHECK(q.waiting() == 0);  // the runner's frames went, and with them the waiter
}

TEST_CASE("a queue is idle when nothing is queued and its worker waits for work",
          "[driver][work_queue]") {
  Steps s;
  WorkQueue<int> q;
  WaitQueue gate;
  Log log;
  CHECK_FALSE(q.idle());  // no worker
  TaskRunner r;
  r.run(serve(q, s, [&](int i) { return note(i, log, true, gate, s); }));
  CHECK(q.idle());
  q.post(1);
  CHECK_FALSE(q.idle());  // queued
  s.run();
  CHECK(q.empty());
  CHECK_FALSE(q.idle());  // handled: the handler blocks
  gate.wake_all();
  s.run();
  CHECK(q.idle());
  CHECK(take(log) == Log{"start 1", "end 1"});
}

TEST_CASE("a queue's digest is the number of items queued", "[driver][work_queue]") {
  WorkQueue<int> q;
  auto digest = [&] {
    Digest d;
    q.digest(d);
    return d.value();
  };
  Digest none, two;
  none.add(0);
  two.add(2);
  CHECK(digest() == none.value());
  q.post(5);
  q.post(6);
  CHECK(digest() == two.value());
  q.clear();
  CHECK(digest() == none.value());
}

TEST_CASE(
    "a mutex a device reset forgets is freed only if that driver held it, and the next waiter "
    "then takes it",
    "[driver][mutex]") {
  Steps s;
  Mutex m;
  TaskRunner runner;
  const int a = 0, b = 0;  // two owners (drivers)
  Log log;
  const auto take_it = [&](const void* owner, int item) -> Task<void> {
    co_await m.lock(s, owner);
    log.push_back("locked " + std::to_string(item));
  };
  runner.run(take_it(&a, 1));
  runner.run(take_it(&b, 2));  // waits: a holds it
  s.run();
  CHECK(take(log) == Log{"locked 1"});
  m.forget(&b);  // b did not hold it: still a's
  s.run();
  CHECK(take(log).empty());
  m.forget(&a);  // a's holder was abandoned: free, and b's waiter takes it
  s.run();
  CHECK(take(log) == Log{"locked 2"});
}

TEST_CASE("a sleep that has ended is not cancelled: a scheduler keeps nothing for it",
          "[driver][coro]") {
  // A cancel of a timer that already ran used to be remembered by the simulator's scheduler
  // until the end of the run: every sleep of a long run (an eviction worker's, a poll loop's)
  // left one behind, and memory grew with simulated time.
  struct Counting : Scheduler {
    std::vector<std::function<void()>> due;
    std::size_t cancels_of_fired = 0, cancels_of_pending = 0;
    Time now() const override { return Time(); }
    TimerId call_at(Time, std::function<void()> fn) override {
      due.push_back(std::move(fn));
      return due.size();
    }
    void cancel(TimerId id) override {
      (due[id - 1] ? cancels_of_pending : cancels_of_fired)++;
      due[id - 1] = nullptr;
    }
    void run() {
      for (std::size_t i = 0; i < due.size(); ++i)
        if (auto fn = std::exchange(due[i], nullptr)) fn();
    }
  } s;
  struct Sleeper {
    static Task<void> run(Scheduler& s, int& woke) {
      for (int i = 0; i < 10; ++i) {
        co_await Sleep(s, Time::ns(5));
        ++woke;
      }
    }
  };
  int woke = 0;
  TaskRunner runner;
  runner.run(Sleeper::run(s, woke));
  s.run();
  CHECK(woke == 10);
  CHECK(s.cancels_of_fired == 0);
  // A frame destroyed while asleep still cancels its timer.
  runner.run(Sleeper::run(s, woke));
  runner.cancel_all();
  CHECK(s.cancels_of_pending == 1);
  s.run();
  CHECK(woke == 10);
}
