// The other ranks of a pod split across MPI ranks, as the pod sees them: plain C++, so that
// what implements it (sim/tools/mpi_ranks.cpp) needs nothing of the simulator.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/core/byte_io.hpp"

namespace podsim {

// The other ranks, as a partitioned pod sees them (sim/tools/mpi_world.hpp implements it with
// MPI). Every call is collective: every rank makes it, in the same order.
class RankComm {
 public:
  virtual ~RankComm() = default;
  virtual std::uint32_t rank() const = 0;
  virtual std::uint32_t ranks() const = 0;
  // The end of a window, in one step: sends out[r] to each rank r (out[rank()] is ignored)
  // and fills in[r] with what rank r sent here; and agrees on what comes next: the smallest of
  // every rank's `next` (the earliest thing it has due, or that what it sent may cause), and
  // how many ranks said `stopped` (every rank: ranks(); some but not all: at least 1, fewer).
  struct Agreement {
    std::int64_t next;
    std::uint32_t stopped;
  };
  virtual Agreement exchange(const std::vector<ByteBuffer>& out, std::vector<ByteBuffer>& in,
                             std::int64_t next, bool stopped) = 0;
  // Every rank's `v`, or'd together.
  virtual std::uint64_t or_all(std::uint64_t v) = 0;
  // Rank 0 gets every rank's `mine` (its own included), by rank; the others get nothing.
  virtual std::vector<ByteBuffer> gather(const ByteBuffer& mine) = 0;
};

}  // namespace podsim
