// The two loops a TLB set runs over its tag words (plain C++): find the line holding a tag,
// and move one line to the front of the set's replacement order. Wide sets (a fully
// associative L1 TLB) run them four words at a time with AVX2 where the CPU has it; the
// results are the same either way (integer compares), so the choice never changes a run.
#pragma once

#include <cstddef>
#include <cstdint>

namespace podsim::tag_scan {

// The first i in [0, n) with (tags[i] & keep) == want; n if none.
std::size_t find(const std::uint64_t* tags, std::size_t n, std::uint64_t want, std::uint64_t keep);
// Every word whose rank (word & rank_mask) is below `rank` gets rank + 1.
void demote_below(std::uint64_t* tags, std::size_t n, std::uint64_t rank, std::uint64_t rank_mask);

// The kernels behind them, for tests that hold the two to the same answers: the plain loops,
// and the AVX2 ones (call those only where avx2() is true).
bool avx2();
std::size_t find_plain(const std::uint64_t* tags, std::size_t n, std::uint64_t want,
                       std::uint64_t keep);
std::size_t find_avx2(const std::uint64_t* tags, std::size_t n, std::uint64_t want,
                      std::uint64_t keep);
void demote_plain(std::uint64_t* tags, std::size_t n, std::uint64_t rank, std::uint64_t rank_mask);
void demote_avx2(std::uint64_t* tags, std::size_t n, std::uint64_t rank, std::uint64_t rank_mask);

// Sets narrower than this run the plain loops inline.
inline constexpr std::size_t kWide = 16;

}  // namespace podsim::tag_scan
