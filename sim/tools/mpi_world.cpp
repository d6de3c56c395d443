#include "sim/tools/mpi_world.hpp"

#include <mpi.h>
#include <sched.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <thread>

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
  // mpirun binds each rank to a core (with two ranks or fewer, by default); a rank's work is
  // done by its children, `-j` of them, which would all share that core. Let them use every
  // core this process may run on.
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < CPU_SETSIZE && c < get_nprocs_conf(); ++c)
    CPU_SET(c, &all);
  sched_setaffinity(0, sizeof all, &all);  // the kernel keeps only the allowed ones
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

namespace {
// Waits for `req` without spinning a core (Open MPI's blocking calls poll): a rank that waits
// for another's points would otherwise take a core from the children doing the work.
void wait_idle(MPI_Request& req, MPI_Status* st) {
  for (int idle = 0;; ++idle) {
    int done = 0;
    check(MPI_Test(&req, &done, st ? st : MPI_STATUS_IGNORE), "MPI_Test");
    if (done) return;
    std::this_thread::sleep_for(std::chrono::microseconds(idle < 100 ? 10 : 1000));
  }
}
}  // namespace

void MpiWorld::send(int to, int tag, const std::string& bytes) {
  const std::uint64_t n = bytes.size();
  MPI_Request req;
  check(MPI_Isend(&n, 1, MPI_UINT64_T, to, tag, MPI_COMM_WORLD, &req), "MPI_Isend");
  wait_idle(req, nullptr);
  for (std::uint64_t off = 0; off < n; off += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - off));
    check(MPI_Isend(bytes.data() + off, len, MPI_CHAR, to, tag, MPI_COMM_WORLD, &req), "MPI_Isend");
    wait_idle(req, nullptr);
  }
}

std::string MpiWorld::receive(int from, int tag, int* source) {
  std::uint64_t n = 0;
  MPI_Status st;
  MPI_Request req;
  check(MPI_Irecv(&n, 1, MPI_UINT64_T, from < 0 ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &req),
        "MPI_Irecv");
  wait_idle(req, &st);
  if (source) *source = st.MPI_SOURCE;
  std::string bytes(n, '\0');
  for (std::uint64_t off = 0; off < n; off += kChunk) {
    const int len = static_cast<int>(std::min(kChunk, n - off));
    check(MPI_Irecv(bytes.data() + off, len, MPI_CHAR, st.MPI_SOURCE, tag, MPI_COMM_WORLD, &req),
          "MPI_Irecv");
    wait_idle(req, nullptr);
  }
  return bytes;
}

int MpiWorld::max_all(int v) {
  if (!g_active) return v;
  int out = v;
  check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

std::vector<int> MpiWorld::gather_all(int v) {
  std::vector<int> out(static_cast<std::size_t>(g_size), v);
  if (g_active)
    check(MPI_Allgather(&v, 1, MPI_INT, out.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather");
  return out;
}

namespace {
const std::ostringstream* g_silenced = nullptr;
}
void MpiWorld::set_silenced(const std::ostringstream* text) {
  g_silenced = text;
}
std::string MpiWorld::silenced() {
  std::string text = g_silenced ? g_silenced->str() : std::string();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

void MpiWorld::abort(int code) {
  if (g_active) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

}  // namespace podsim::tools
