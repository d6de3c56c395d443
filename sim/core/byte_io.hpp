// Plain bytes for messages between the ranks of one run: every rank is the same build on the
// same kind of machine, so fixed-width fields travel as their memory (memcpy), strings as a
// length and their characters. A reader that would run past its end throws
// std::runtime_error naming what it was reading.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace podsim {

// An allocator whose containers leave the elements they add uninitialised (`resize` grows a
// buffer without zeroing what is about to be written over): for ByteBuffer.
// (Constructing from values, std::allocator_traits falls back to std::construct_at.)
template <class T>
struct NoInitAllocator : std::allocator<T> {
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
};

// A message's bytes: appending a field writes it once (no zero fill first), and a buffer
// filled by MPI is sized without being cleared.
using ByteBuffer = std::vector<unsigned char, NoInitAllocator<unsigned char>>;

class ByteWriter {
 public:
  explicit ByteWriter(ByteBuffer& out) : out_(out) {}
  template <class T>
  void put(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    raw(&v, sizeof v);
  }
  void str(std::string_view s) {
    put(static_cast<std::uint64_t>(s.size()));
    raw(s.data(), s.size());
  }
  void raw(const void* p, std::size_t n) {
    if (n == 0) return;
    const std::size_t at = out_.size();
    out_.resize(at + n);
    std::memcpy(out_.data() + at, p, n);
  }
  ByteBuffer& bytes() { return out_; }

 private:
  ByteBuffer& out_;
};

class ByteReader {
 public:
  // `what` names the message in errors ("a message from another rank").
  ByteReader(const unsigned char* in, const unsigned char* end, const char* what)
      : p_(in), end_(end), what_(what) {}
  ByteReader(const ByteBuffer& v, const char* what)
      : ByteReader(v.data(), v.data() + v.size(), what) {}
  template <class T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    T v;
    need(sizeof v);
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  // A string, read in place (valid as long as the bytes).
  std::string_view view() {
    const auto n = get<std::uint64_t>();
    need(n);
    std::string_view s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }
  std::string str() { return std::string(view()); }
  // `n` bytes, read in place.
  const unsigned char* take(std::size_t n) {
    need(n);
    const unsigned char* at = p_;
    p_ += n;
    return at;
  }
  const unsigned char* here() const { return p_; }
  bool done() const { return p_ == end_; }

 private:
  void need(std::size_t n) const {
    if (static_cast<std::size_t>(end_ - p_) < n)
      throw std::runtime_error(std::string(what_) + " is cut short");
  }
  const unsigned char* p_;
  const unsigned char* end_;
  const char* what_;
};

}  // namespace podsim
