// A first-in first-out queue in one growable ring buffer: push at the back, pop at the front,
// no allocation once it has grown to its working size (std::deque allocates a block every few
// dozen pushes). Plain C++.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

namespace podsim {

template <class T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  T& front() { return buf_[head_]; }
  const T& front() const { return buf_[head_]; }
  T& back() { return buf_[wrap(head_ + size_ - 1)]; }
  // The i-th element from the front.
  T& operator[](std::size_t i) { return buf_[wrap(head_ + i)]; }
  const T& operator[](std::size_t i) const { return buf_[wrap(head_ + i)]; }

  // (By reference: a queue of over-aligned entries is not passed them by value.)
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  void pop_front() {
    // Emptied: start again at the first slot, so a queue that is mostly empty keeps using the
    // same (cached) slots instead of cycling through its whole buffer.
    head_ = --size_ == 0 ? 0 : static_cast<std::uint32_t>(wrap(head_ + 1));
  }
  void clear() {
    head_ = 0;
    size_ = 0;
  }
  // Inserts keeping the queue sorted by `less` (an element goes after its equals), searching
  // from the back: O(1) when it belongs at the back, the usual case.
  template <class Less>
  void insert_sorted(const T& v, Less less) {
    push_back(v);
    for (std::size_t i = size_ - 1; i > 0 && less((*this)[i], (*this)[i - 1]); --i)
      std::swap((*this)[i], (*this)[i - 1]);
  }

 private:
  template <class U>
  void emplace_back(U&& v) {
    if (size_ == cap_) [[unlikely]] {
      T copy(std::forward<U>(v));  // `v` may be one of ours, which growing moves
      grow();
      buf_[wrap(head_ + size_)] = std::move(copy);
    } else {
      buf_[wrap(head_ + size_)] = std::forward<U>(v);
    }
    ++size_;
  }
  std::size_t wrap(std::size_t i) const { return i & (cap_ - 1); }
  void grow() {
    const std::uint32_t cap = cap_ == 0 ? 8 : cap_ * 2;
    auto next = std::make_unique<T[]>(cap);
    for (std::size_t i = 0; i < size_; ++i)
      next[i] = std::move((*this)[i]);
    buf_ = std::move(next);
    cap_ = cap;
    head_ = 0;
  }
  // 24 bytes (a vector and two sizes were 40): a component keeping several queues side by side
  // touches fewer cache lines looking at them.
  std::unique_ptr<T[]> buf_;
  std::uint32_t cap_ = 0;  // a power of two
  std::uint32_t head_ = 0, size_ = 0;
};
static_assert(sizeof(Fifo<int>) == 24);

}  // namespace podsim
