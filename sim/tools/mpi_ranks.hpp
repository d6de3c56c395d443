// The ranks of an MPI launch as a partitioned pod needs them (sim/pod/rank_comm.hpp), on MPI
// collectives over MPI_COMM_WORLD.
#pragma once

#include <memory>

#include "sim/pod/rank_comm.hpp"

namespace podsim::tools {

// The world's ranks (MpiWorld::init must have run; one rank when not launched by mpirun).
std::unique_ptr<RankComm> mpi_ranks();

}  // namespace podsim::tools
