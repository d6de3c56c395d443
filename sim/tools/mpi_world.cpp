#include "sim/tools/mpi_world.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>

namespace podsim::tools {

namespace {
bool g_active = false;
int g_rank = 0, g_size = 1;

// Launched by mpirun/mpiexec (Open MPI, PMIx) or srun (PMI): what those set for every rank.
bool launched_by_mpi() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}
constexpr std::uint64_t kChunk = 1u << 30;  // MPI counts are ints: long strings go in pieces
}  // namespace

void MpiWorld::init(int* argc, char*** argv) {
  if (g_active || !launched_by_mpi()) return;
  check(MPI_Init(argc, argv), "MPI_Init");
  g_active = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
}

void MpiWorld::finalize() {
  if (!g_active) return;
  g_active = false;
  MPI_Finalize();
}

int MpiWorld::rank() {
  return g_rank;
}
int MpiWorld::size() {
  return g_size;
}

void MpiWorld::send(int to, int tag, const std::string& bytes) {
  const std::uint64_t n = bytes.size();
  check(MPI_Send(&n, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD), "MPI_Send");
  for (std::uint64_t off = 0; off < n; off += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - off));
    check(MPI_Send(bytes.data() + off, len, MPI_CHAR, to, tag, MPI_COMM_WORLD), "MPI_Send");
  }
}

std::string MpiWorld::receive(int from, int tag, int* source) {
  std::uint64_t n = 0;
  MPI_Status st;
  check(MPI_Recv(&n, 1, MPI_UINT64_T, from < 0 ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &st),
        "MPI_Recv");
  if (source) *source = st.MPI_SOURCE;
  std::string bytes(n, '\0');
  for (std::uint64_t off = 0; off < n; off += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - off));
    check(MPI_Recv(bytes.data() + off, len, MPI_CHAR, st.MPI_SOURCE, tag, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
  }
  return bytes;
}

int MpiWorld::max_all(int v) {
  if (!g_active) return v;
  int out = v;
  check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

void MpiWorld::abort(int code) {
  if (g_active) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace podsim::tools
