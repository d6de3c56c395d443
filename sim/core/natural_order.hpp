// Natural order of names (plain C++): digit runs compare as numbers ("gpu2" before "gpu10"),
// the same number with fewer leading zeros first, everything else byte by byte. The
// dispatcher ranks its queues by it (the same-time ordering contract, sim/kernel/
// timed_queue.hpp), so it must never change.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace podsim {

namespace natural_detail {
inline bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
}  // namespace natural_detail

// a before b, in natural order: the order's definition, which natural_key reproduces (the
// unit tests hold the one to the other).
inline bool natural_less(std::string_view a, std::string_view b) {
  using natural_detail::is_digit;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && is_digit(a[ei]))
        ++ei;
      while (ej < b.size() && is_digit(b[ej]))
        ++ej;
      // Without leading zeros, the longer run is the larger number.
      std::size_t zi = i, zj = j;
      while (zi + 1 < ei && a[zi] == '0')
        ++zi;
      while (zj + 1 < ej && b[zj] == '0')
        ++zj;
      if (ei - zi != ej - zj) return ei - zi < ej - zj;
      if (const int c = a.substr(zi, ei - zi).compare(b.substr(zj, ej - zj)); c != 0) return c < 0;
      if (ei - i != ej - j) return ei - i < ej - j;  // same number: fewer zeros first
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// A key whose plain byte order is natural_less's: sorting many names by their keys compares
// bytes (memcmp) instead of walking digit runs in every comparison. Each digit run becomes
// '0' (which compares with any other byte as any digit does), its length without leading
// zeros (four bytes, most significant first), those digits, and its whole length (four bytes:
// fewer zeros first).
inline std::string natural_key(std::string_view s) {
  using natural_detail::is_digit;
  std::string key;
  key.reserve(s.size() + 16);
  for (std::size_t i = 0; i < s.size();) {
    if (!is_digit(s[i])) {
      key += s[i++];
      continue;
    }
    std::size_t e = i;
    while (e < s.size() && is_digit(s[e]))
      ++e;
    std::size_t z = i;
    while (z + 1 < e && s[z] == '0')
      ++z;
    auto length = [&key](std::size_t n) {
      for (int shift = 24; shift >= 0; shift -= 8)
        key += static_cast<char>(static_cast<unsigned char>(n >> shift));
    };
    key += '0';
    length(e - z);
    key.append(s.substr(z, e - z));
    length(e - i);
    i = e;
  }
  return key;
}

}  // namespace podsim
