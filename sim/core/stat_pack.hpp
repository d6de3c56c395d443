// A stat's recorded values as 64-bit words, and their sum back into a stat: the reduction of a
// pod split across MPI ranks, where at the end of a run each rank packs the stats every rank
// adds to (sim/pod/pod.cpp: links, the summary) and rank 0 merges them into its own. Merging gives
// exactly what the stat would hold had it recorded the other's values too.
//
// A packed stat is self-describing: a tag word (a fixed pattern and the stat's kind), a length
// word (how many words follow), then its values:
//   Counter       1 word: the value
//   Series        one word per index
//   Formula       nothing (derived from other stats when written)
//   Distribution  count, min (UINT64_MAX if empty), max, the 128-bit sum (low word, high
//                 word), the index of the first bucket that holds samples, the number of
//                 buckets, then the counts of the buckets from the first to the last that
//                 holds samples
//   Breakdown     the sum of every part, then the number of samples
// The stat's name is not packed: the caller says which stat it is.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/stats.hpp"

namespace podsim {

// Appends the stat's recorded values to `out`.
void pack_stat(const Stat& s, std::vector<std::uint64_t>& out);

// Adds the values packed at `in` (by pack_stat) into the stat behind `s`: counters, series and
// breakdowns are summed, histograms merged as LogHistogram::merge does. Returns the position
// after what it read. Throws std::runtime_error naming the stat, and changing nothing, if the
// packed stat is of another kind or shape (a series of another length, a breakdown with other
// parts), is malformed, or runs past `end`.
const std::uint64_t* merge_packed(const Stat& s, const std::uint64_t* in, const std::uint64_t* end);

}  // namespace podsim
