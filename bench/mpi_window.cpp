// What one synchronisation window of a split run costs with nothing to wait for: the ranks
// exchange a window's headers (an MPI_Alltoall of four int64 per rank, as MpiRanks::exchange
// does) and, optionally, a message of BYTES to each other rank, WINDOWS times in a row, with no
// simulation between. A split run spends at least this per window; what it spends beyond it is
// ranks waiting for each other (docs/parallel.md). Prints microseconds per window.
//
//   mpirun -n 2 build/release/bench/bench_mpi_window [WINDOWS [BYTES]]   (default 200000, 0)
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const long windows = argc > 1 ? std::atol(argv[1]) : 200000;
  const long bytes = argc > 2 ? std::atol(argv[2]) : 0;
  if (windows <= 0 || bytes < 0 || bytes > (1L << 30)) {
    if (rank == 0) std::fprintf(stderr, "usage: bench_mpi_window [WINDOWS>0 [BYTES>=0]]\n");
    MPI_Finalize();
    return 2;
  }
  const auto n = static_cast<std::size_t>(ranks);
  std::vector<std::int64_t> head_out(n * 4, 0), head_in(n * 4, 0);
  std::vector<std::vector<char>> out(n, std::vector<char>(static_cast<std::size_t>(bytes), 1));
  std::vector<std::vector<char>> in(n, std::vector<char>(static_cast<std::size_t>(bytes), 0));
  std::vector<MPI_Request> requests;
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long w = 0; w < windows; ++w) {
    head_out[0] = w;
    MPI_Alltoall(head_out.data(), 4, MPI_INT64_T, head_in.data(), 4, MPI_INT64_T, MPI_COMM_WORLD);
    if (bytes == 0) continue;
    requests.clear();
    for (int r = 0; r < ranks; ++r) {
      if (r == rank) continue;
      MPI_Irecv(in[r].data(), static_cast<int>(bytes), MPI_BYTE, r, 0, MPI_COMM_WORLD,
                &requests.emplace_back());
      MPI_Isend(out[r].data(), static_cast<int>(bytes), MPI_BYTE, r, 0, MPI_COMM_WORLD,
                &requests.emplace_back());
    }
    MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
  }
  const double seconds = MPI_Wtime() - start;
  if (rank == 0)
    std::printf(
        "%d ranks, %ld windows, %ld bytes to each other rank per window: %.2f us per window\n",
        ranks, windows, bytes, seconds / static_cast<double>(windows) * 1e6);
  MPI_Finalize();
  return 0;
}
