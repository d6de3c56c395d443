#include "sim/tools/mpi_ranks.hpp"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>

#include "sim/tools/mpi_world.hpp"

namespace podsim::tools {

namespace {

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw std::runtime_error(std::string("MPI: ") + what + " failed");
}

// Message sizes go as int counts (MPI's): a window's messages are far below 2 GiB.
int count_of(std::size_t n) {
  if (n > static_cast<std::size_t>(INT_MAX))
    throw std::runtime_error("MPI: a message to another rank exceeds 2 GiB");
  return static_cast<int>(n);
}

class MpiRanks final : public RankComm {
 public:
  MpiRanks()
      : rank_(static_cast<std::uint32_t>(MpiWorld::rank())),
        ranks_(static_cast<std::uint32_t>(MpiWorld::size())) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &windows_), "MPI_Comm_dup");
  }
  ~MpiRanks() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (windows_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&windows_);
  }
  MpiRanks(const MpiRanks&) = delete;
  MpiRanks& operator=(const MpiRanks&) = delete;
  std::uint32_t rank() const override { return rank_; }
  std::uint32_t ranks() const override { return ranks_; }

  Agreement exchange(const std::vector<ByteBuffer>& out, std::vector<ByteBuffer>& in,
                     std::int64_t next, bool stopped) override {
    // First a small all-to-all: to each rank, how many bytes follow for it, and this rank's
    // next time, whether it stopped and how many bytes it sends in all (the same to everyone),
    // from which every rank works out the same agreement. The bytes follow point to point
    // (below), skipped by every rank alike when no rank sends any.
    const int n = static_cast<int>(ranks_);
    std::size_t total = 0;
    for (int r = 0; r < n; ++r)
      if (r != static_cast<int>(rank_)) total += out.at(r).size();
    head_out_.assign(static_cast<std::size_t>(n) * kHead, 0);
    head_in_.assign(static_cast<std::size_t>(n) * kHead, 0);
    for (int r = 0; r < n; ++r) {
      std::int64_t* h = &head_out_[static_cast<std::size_t>(r) * kHead];
      h[0] = r == static_cast<int>(rank_) ? 0 : static_cast<std::int64_t>(out[r].size());
      h[1] = next;
      h[2] = stopped ? 1 : 0;
      h[3] = static_cast<std::int64_t>(total);
    }
    check(MPI_Alltoall(head_out_.data(), kHead, MPI_INT64_T, head_in_.data(), kHead, MPI_INT64_T,
                       MPI_COMM_WORLD),
          "MPI_Alltoall");
    Agreement a{INT64_MAX, 0};
    std::int64_t any = 0;
    for (int r = 0; r < n; ++r) {
      const std::int64_t* h = &head_in_[static_cast<std::size_t>(r) * kHead];
      a.next = std::min(a.next, h[1]);
      a.stopped += static_cast<std::uint32_t>(h[2]);
      any += h[3];
    }
    in.resize(ranks_);
    for (auto& v : in)
      v.clear();
    if (any == 0) return a;
    // The bytes go point to point, each from and into its own buffer (no copies), on a
    // communicator of their own: every rank posts every receive the headers announce and
    // every send, then waits for all of them. Messages between two ranks arrive in the order
    // sent (MPI's rule), and no rank starts the next window's before this one's are done.
    requests_.clear();
    for (int r = 0; r < n; ++r) {
      const auto bytes = static_cast<std::size_t>(head_in_[static_cast<std::size_t>(r) * kHead]);
      if (r == static_cast<int>(rank_) || bytes == 0) continue;
      in[r].resize(bytes);
      check(MPI_Irecv(in[r].data(), count_of(bytes), MPI_BYTE, r, 0, windows_,
                      &requests_.emplace_back()),
            "MPI_Irecv");
    }
    for (int r = 0; r < n; ++r) {
      if (r == static_cast<int>(rank_) || out[r].empty()) continue;
      check(MPI_Isend(out[r].data(), count_of(out[r].size()), MPI_BYTE, r, 0, windows_,
                      &requests_.emplace_back()),
            "MPI_Isend");
    }
    check(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE),
          "MPI_Waitall");
    return a;
  }

  std::uint64_t or_all(std::uint64_t v) override {
    std::uint64_t out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  std::vector<ByteBuffer> gather(const ByteBuffer& mine) override {
    const int n = static_cast<int>(ranks_);
    const int size = count_of(mine.size());
    std::vector<int> sizes(rank_ == 0 ? ranks_ : 0);
    check(MPI_Gather(&size, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
    std::vector<int> at(sizes.size());
    std::size_t total = 0;
    for (int r = 0; r < static_cast<int>(sizes.size()); ++r) {
      at[r] = count_of(total);
      total += static_cast<std::size_t>(sizes[r]);
    }
    ByteBuffer all(total);
    check(MPI_Gatherv(mine.data(), size, MPI_BYTE, all.data(), sizes.data(), at.data(), MPI_BYTE, 0,
                      MPI_COMM_WORLD),
          "MPI_Gatherv");
    std::vector<ByteBuffer> out;
    if (rank_ != 0) return out;
    for (int r = 0; r < n; ++r)
      out.emplace_back(all.begin() + at[r], all.begin() + at[r] + sizes[r]);
    return out;
  }

 private:
  static constexpr int kHead = 4;  // bytes for the rank, next, stopped, bytes sent in all
  std::uint32_t rank_, ranks_;
  std::vector<std::int64_t> head_out_, head_in_;
  MPI_Comm windows_ = MPI_COMM_NULL;   // the windows' point-to-point bytes
  std::vector<MPI_Request> requests_;  // kept between windows
};

}  // namespace

std::unique_ptr<RankComm> mpi_ranks() {
  return std::make_unique<MpiRanks>();
}

}  // namespace podsim::tools
