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
        ranks_(static_cast<std::uint32_t>(MpiWorld::size())) {}
  std::uint32_t rank() const override { return rank_; }
  std::uint32_t ranks() const override { return ranks_; }

  Agreement exchange(const std::vector<std::vector<unsigned char>>& out,
                     std::vector<std::vector<unsigned char>>& in, std::int64_t next,
                     bool stopped) override {
    // First a small all-to-all: to each rank, how many bytes follow for it, and this rank's
    // next time, whether it stopped and how many bytes it sends in all (the same to everyone),
    // from which every rank works out the same agreement. The bytes follow in an all-to-all-v,
    // skipped by every rank alike when no rank sends any.
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
    // Counts and displacements from the headers' first word: what goes to each rank, what
    // comes from each.
    auto layout = [&](const std::vector<std::int64_t>& head, std::vector<int>& counts,
                      std::vector<int>& at) {
      counts.resize(ranks_);
      at.resize(ranks_);
      std::size_t total = 0;
      for (int r = 0; r < n; ++r) {
        counts[r] = count_of(static_cast<std::size_t>(head[static_cast<std::size_t>(r) * kHead]));
        at[r] = count_of(total);
        total += static_cast<std::size_t>(counts[r]);
      }
      return total;
    };
    send_buf_.resize(layout(head_out_, send_counts_, send_at_));
    for (int r = 0; r < n; ++r)
      if (send_counts_[r]) std::copy(out[r].begin(), out[r].end(), send_buf_.begin() + send_at_[r]);
    recv_buf_.resize(layout(head_in_, recv_counts_, recv_at_));
    check(MPI_Alltoallv(send_buf_.data(), send_counts_.data(), send_at_.data(), MPI_BYTE,
                        recv_buf_.data(), recv_counts_.data(), recv_at_.data(), MPI_BYTE,
                        MPI_COMM_WORLD),
          "MPI_Alltoallv");
    for (int r = 0; r < n; ++r)
      in[r].assign(recv_buf_.begin() + recv_at_[r],
                   recv_buf_.begin() + recv_at_[r] + recv_counts_[r]);
    return a;
  }

  std::uint64_t or_all(std::uint64_t v) override {
    std::uint64_t out = 0;
    check(MPI_Allreduce(&v, &out, 1, MPI_UINT64_T, MPI_BOR, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
  }

  std::vector<std::vector<unsigned char>> gather(const std::vector<unsigned char>& mine) override {
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
    std::vector<unsigned char> all(total);
    check(MPI_Gatherv(mine.data(), size, MPI_BYTE, all.data(), sizes.data(), at.data(), MPI_BYTE, 0,
                      MPI_COMM_WORLD),
          "MPI_Gatherv");
    std::vector<std::vector<unsigned char>> out;
    if (rank_ != 0) return out;
    for (int r = 0; r < n; ++r)
      out.emplace_back(all.begin() + at[r], all.begin() + at[r] + sizes[r]);
    return out;
  }

 private:
  static constexpr int kHead = 4;  // bytes for the rank, next, stopped, bytes sent in all
  std::uint32_t rank_, ranks_;
  std::vector<std::int64_t> head_out_, head_in_;
  std::vector<int> send_counts_, send_at_, recv_counts_, recv_at_;  // kept between windows
  std::vector<unsigned char> send_buf_, recv_buf_;
};

}  // namespace

std::unique_ptr<RankComm> mpi_ranks() {
  return std::make_unique<MpiRanks>();
}

}  // namespace podsim::tools
