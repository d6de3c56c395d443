#include "models/mmu/tag_scan.hpp"

#include <immintrin.h>

namespace podsim::tag_scan {

std::size_t find_plain(const std::uint64_t* tags, std::size_t n, std::uint64_t want,
                       std::uint64_t keep) {
  for (std::size_t i = 0; i < n; ++i)
    if ((tags[i] & keep) == want) return i;
  return n;
}

void demote_plain(std::uint64_t* tags, std::size_t n, std::uint64_t rank, std::uint64_t mask) {
  for (std::size_t i = 0; i < n; ++i)
    tags[i] += (tags[i] & mask) < rank ? 1 : 0;
}

__attribute__((target("avx2"))) std::size_t find_avx2(const std::uint64_t* tags, std::size_t n,
                                                      std::uint64_t want, std::uint64_t keep) {
  const __m256i w = _mm256_set1_epi64x(static_cast<long long>(want));
  const __m256i k = _mm256_set1_epi64x(static_cast<long long>(keep));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tags + i));
    const __m256i eq = _mm256_cmpeq_epi64(_mm256_and_si256(x, k), w);
    const int m = _mm256_movemask_pd(_mm256_castsi256_pd(eq));
    if (m) return i + static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(m)));
  }
  for (; i < n; ++i)
    if ((tags[i] & keep) == want) return i;
  return n;
}

// Ranks are below 2^20, so the signed compare is exact.
__attribute__((target("avx2"))) void demote_avx2(std::uint64_t* tags, std::size_t n,
                                                 std::uint64_t rank, std::uint64_t mask) {
  const __m256i r = _mm256_set1_epi64x(static_cast<long long>(rank));
  const __m256i m = _mm256_set1_epi64x(static_cast<long long>(mask));
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m256i* p = reinterpret_cast<__m256i*>(tags + i);
    const __m256i x = _mm256_loadu_si256(p);
    const __m256i below = _mm256_cmpgt_epi64(r, _mm256_and_si256(x, m));  // -1 where below
    _mm256_storeu_si256(p, _mm256_sub_epi64(x, below));
  }
  for (; i < n; ++i)
    tags[i] += (tags[i] & mask) < rank ? 1 : 0;
}

namespace {
const bool kAvx2 = __builtin_cpu_supports("avx2");
}  // namespace

bool avx2() {
  return kAvx2;
}

std::size_t find(const std::uint64_t* tags, std::size_t n, std::uint64_t want, std::uint64_t keep) {
  return kAvx2 ? find_avx2(tags, n, want, keep) : find_plain(tags, n, want, keep);
}

void demote_below(std::uint64_t* tags, std::size_t n, std::uint64_t rank, std::uint64_t mask) {
  if (kAvx2)
    demote_avx2(tags, n, rank, mask);
  else
    demote_plain(tags, n, rank, mask);
}

}  // namespace podsim::tag_scan
