// A digest of a component's state (FNV-1a, 64 bits), for tests that compare two ways of
// reaching the same state: feed it the state's fields in a fixed order (sort what is
// unordered); equal states give equal digests.
#pragma once

#include <cstdint>
#include <string_view>

namespace podsim {

class Digest {
 public:
  Digest& add(std::uint64_t v) {
    for (int i = 0; i < 8; ++i)
      byte(static_cast<unsigned char>(v >> (8 * i)));
    return *this;
  }
  Digest& add(std::string_view s) {
    add(s.size());
    for (char c : s)
      byte(static_cast<unsigned char>(c));
    return *this;
  }
  std::uint64_t value() const { return h_; }

 private:
  void byte(unsigned char b) { h_ = (h_ ^ b) * 0x100000001b3ull; }
  std::uint64_t h_ = 0xcbf29ce484222325ull;
};

}  // namespace podsim
