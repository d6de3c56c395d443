// Coroutines for the driver model: kernel code blocks (it polls a write-back page, waits for
// a response, sleeps), so the driver is written as sequential C++20 coroutines that suspend
// where the kernel would sleep. Plain C++: a Scheduler says what time it is and runs
// callbacks later; the SystemC shell implements it with events, unit tests with a queue.
//
//   Task<Result<Fd>> Driver::import_handle(...) {
//     co_await sleep(cfg_.ioctl_latency);
//     Errno e = co_await send(peer, msg);
//     bool woken = co_await node.done.wait(sched_, cfg_.response_timeout);
//     ...
//   }
//
// Between two suspension points a coroutine runs without interruption (like kernel code
// between sleeps on a uniprocessor), so state must be re-checked after every co_await.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <list>
#include <optional>
#include <type_traits>
#include <utility>

#include "sim/core/units.hpp"

namespace podsim::driver {

class Scheduler {
 public:
  using TimerId = std::uint64_t;
  virtual ~Scheduler() = default;
  virtual Time now() const = 0;
  // Runs `fn` at time `at` (>= now), after anything already due then. Returns an ID for cancel.
  virtual TimerId call_at(Time at, std::function<void()> fn) = 0;
  // A cancelled callback does not run. Cancelling one that ran or was cancelled is harmless.
  virtual void cancel(TimerId id) = 0;
  // How long a thread woken from a wait takes to run (the host kernel's scheduling latency).
  virtual Time wake_latency() const { return Time{}; }
};

namespace detail {
template <class Promise>
struct FinalAwaiter {
  bool await_ready() noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<Promise> h) noexcept {
    auto c = h.promise().continuation;
    return c ? c : std::noop_coroutine();
  }
  void await_resume() noexcept {}
};
struct PromiseBase {
  std::coroutine_handle<> continuation;
  std::exception_ptr error;
  std::suspend_always initial_suspend() noexcept { return {}; }
  void unhandled_exception() { error = std::current_exception(); }
};
}  // namespace detail

template <class T = void>
class Task;

namespace detail {
template <class T>
struct Promise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object();
  FinalAwaiter<Promise> final_suspend() noexcept { return {}; }
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};
template <>
struct Promise<void> : PromiseBase {
  Task<void> get_return_object();
  FinalAwaiter<Promise> final_suspend() noexcept { return {}; }
  void return_void() {}
};
}  // namespace detail

// A lazily started coroutine producing a T; co_await it to run it and get the T.
template <class T>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task(Task&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  Task& operator=(Task&& o) noexcept {
    if (this != &o) {
      if (h_) h_.destroy();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~Task() {
    if (h_) h_.destroy();
  }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> cont) noexcept {
    h_.promise().continuation = cont;
    return h_;
  }
  T await_resume() {
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
    if constexpr (!std::is_void_v<T>) return std::move(*h_.promise().value);
  }

 private:
  friend promise_type;
  explicit Task(Handle h) : h_(h) {}
  Handle h_;
};

namespace detail {
template <class T>
Task<T> Promise<T>::get_return_object() {
  return Task<T>(std::coroutine_handle<Promise>::from_promise(*this));
}
inline Task<void> Promise<void>::get_return_object() {
  return Task<void>(std::coroutine_handle<Promise>::from_promise(*this));
}
}  // namespace detail

// Owns running tasks: starts each at once, keeps its frame until it has finished, and
// destroys whatever is still suspended when the runner goes (declare it after everything
// the tasks wait on, so it is destroyed first). An exception escaping a task propagates to
// whoever resumed it (the scheduler), ending the simulation: it is a bug in the model.
class TaskRunner {
 public:
  TaskRunner() = default;
  TaskRunner(const TaskRunner&) = delete;
  TaskRunner& operator=(const TaskRunner&) = delete;
  ~TaskRunner() {
    for (auto h : frames_)
      h.destroy();
  }

  void run(Task<void> t) {
    reap();
    frames_.push_back(wrap_void(std::move(t)).h);
  }
  template <class T, class Fn>
  void run(Task<T> t, Fn done) {
    reap();
    frames_.push_back(wrap(std::move(t), std::move(done)).h);
  }
  // Destroys every task, finished or not (a device reset abandons what was in flight).
  void cancel_all() {
    auto frames = std::move(frames_);
    frames_.clear();
    for (auto h : frames)
      h.destroy();
  }
  std::size_t running() const {
    std::size_t n = 0;
    for (auto h : frames_)
      n += !h.done();
    return n;
  }

 private:
  struct Owned {
    struct promise_type {
      Owned get_return_object() noexcept {
        return {std::coroutine_handle<promise_type>::from_promise(*this)};
      }
      std::suspend_never initial_suspend() noexcept { return {}; }
      std::suspend_always final_suspend() noexcept { return {}; }
      void return_void() noexcept {}
      void unhandled_exception() { throw; }
    };
    std::coroutine_handle<promise_type> h;
  };
  static Owned wrap_void(Task<void> t) { co_await std::move(t); }
  template <class T, class Fn>
  static Owned wrap(Task<T> t, Fn done) {
    done(co_await std::move(t));
  }
  void reap() {
    for (auto it = frames_.begin(); it != frames_.end();) {
      if (it->done()) {
        it->destroy();
        it = frames_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::list<std::coroutine_handle<Owned::promise_type>> frames_;
};

// co_await Sleep{sched, d}: resumes `d` later (CPU work, or usleep in a polling loop).
struct Sleep {
  Scheduler& sched;
  Time delay;
  Scheduler::TimerId timer = 0;
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<> h) {
    timer = sched.call_at(sched.now() + delay, [this, h] {
      timer = 0;  // fired: nothing left to cancel
      h.resume();
    });
  }
  void await_resume() const noexcept {}
  Sleep(Scheduler& s, Time d) : sched(s), delay(d) {}
  Sleep(const Sleep&) = delete;
  ~Sleep() {
    if (timer) sched.cancel(timer);  // a frame destroyed while asleep is never resumed
  }
};

// A kernel wait queue: coroutines wait (with a timeout) until someone wakes them.
class WaitQueue {
 public:
  WaitQueue() = default;
  WaitQueue(const WaitQueue&) = delete;
  WaitQueue& operator=(const WaitQueue&) = delete;
  ~WaitQueue() { wake_all(); }  // waiters resume (woken) and must re-check what they wait for

  class Awaiter {
   public:
    Awaiter(WaitQueue& q, Scheduler& s, std::optional<Time> timeout)
        : q_(&q), sched_(s), timeout_(timeout) {}
    Awaiter(const Awaiter&) = delete;
    ~Awaiter() {
      if (linked_) q_->waiters_.erase(pos_);
      if (timeout_timer_) sched_.cancel(timeout_timer_);
      if (wake_timer_) sched_.cancel(wake_timer_);
    }
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      h_ = h;
      pos_ = q_->waiters_.insert(q_->waiters_.end(), this);
      linked_ = true;
      if (timeout_)
        timeout_timer_ = sched_.call_at(sched_.now() + *timeout_, [this] {
          timeout_timer_ = 0;
          q_->waiters_.erase(pos_);
          linked_ = false;
          h_.resume();  // timed out: woken_ stays false
        });
    }
    // True if woken, false if the timeout expired first.
    bool await_resume() const noexcept { return woken_; }

   private:
    friend class WaitQueue;
    void wake() {
      linked_ = false;
      woken_ = true;
      if (timeout_timer_) sched_.cancel(timeout_timer_);
      timeout_timer_ = 0;
      wake_timer_ = sched_.call_at(sched_.now() + sched_.wake_latency(), [this] {
        wake_timer_ = 0;
        h_.resume();
      });
    }
    WaitQueue* q_;
    Scheduler& sched_;
    std::optional<Time> timeout_;
    std::coroutine_handle<> h_;
    Scheduler::TimerId timeout_timer_ = 0, wake_timer_ = 0;
    bool woken_ = false, linked_ = false;
    std::list<Awaiter*>::iterator pos_;
  };

  // co_await q.wait(sched, timeout) -> bool woken. No timeout: wait until woken.
  Awaiter wait(Scheduler& sched, std::optional<Time> timeout = std::nullopt) {
    return Awaiter(*this, sched, timeout);
  }

  // Wakes every waiter; they run after the caller's current step, in the order they waited.
  void wake_all() {
    while (!waiters_.empty()) {
      Awaiter* a = waiters_.front();
      waiters_.pop_front();
      a->wake();
    }
  }
  bool empty() const { return waiters_.empty(); }
  std::size_t size() const { return waiters_.size(); }

 private:
  std::list<Awaiter*> waiters_;
};

// A kernel mutex, held across sleeps: co_await lock(sched) waits until no one holds it.
class Mutex {
 public:
  // `owner`: who takes it (a driver, a host), so that a device reset frees it only if that
  // driver's abandoned tasks held it.
  Task<void> lock(Scheduler& sched, const void* owner) {
    while (held_)
      co_await free_.wait(sched);
    held_ = true;
    owner_ = owner;
  }
  void unlock() {
    held_ = false;
    owner_ = nullptr;
    free_.wake_all();
  }
  // `owner`'s tasks were abandoned (a device reset, which abandons their waits too): if one
  // of them held it, it is free, and whoever else waits for it tries again.
  void forget(const void* owner) {
    if (held_ && owner_ == owner) unlock();
  }

 private:
  bool held_ = false;
  const void* owner_ = nullptr;
  WaitQueue free_;
};

}  // namespace podsim::driver
