// Seeded random numbers, owned by the component that uses them. A component derives its
// generator from the run seed and its own stable name, so adding a component elsewhere
// does not change another component's sequence.
#pragma once

#include <cstdint>
#include <string_view>

namespace podsim {

// SplitMix64's finalizer: a well-mixed 64-bit hash of `x`. The one hash for spreading keys
// (a plane for an address, a path for a flow); Rng below steps it.
inline std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// SplitMix64: small, fast, well-distributed; used to expand seeds and as a generator.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}
  // A generator for the component named `name` in a run seeded with `seed`.
  static Rng for_component(std::uint64_t seed, std::string_view name) {
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a of the name
    for (char c : name)
      h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    Rng r(seed ^ h);
    r.next();
    return r;
  }

  std::uint64_t next() { return mix64(state_ += 0x9e3779b97f4a7c15ull); }
  // Uniform in [0, n), without modulo bias (Lemire's method).
  std::uint64_t below(std::uint64_t n) {
    if (n == 0) return 0;
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    auto lo = static_cast<std::uint64_t>(m);
    if (lo < n) {
      std::uint64_t t = (0 - n) % n;
      while (lo < t) {
        m = static_cast<unsigned __int128>(next()) * n;
        lo = static_cast<std::uint64_t>(m);
      }
    }
    return static_cast<std::uint64_t>(m >> 64);
  }
  // Where the sequence is (for state digests).
  std::uint64_t state() const { return state_; }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

}  // namespace podsim
