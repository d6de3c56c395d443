// One pod across ranks (docs/parallel.md). Every rank builds the whole fabric, but simulates
// only the GPUs and switches the plan gives it (and builds only those GPUs, unless the setup is
// direct). A link whose two ends are on different ranks is cut: what reaches its far end (a
// packet with its head time, credits with theirs) is kept in a message for that end's rank.
// The ranks run in windows that end before anything waiting on any rank at their start can
// make something happen on another rank (each queued item's due time plus its component's
// lookahead: a GPU's path to a switch's input, a switch's to the next hop or a credit
// return), so nothing sent in a window is due before the window has ended; at each window's
// end they exchange their messages, deliver what they received exactly as the link would
// have, and agree on the next window (idle stretches are skipped).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "fabric/topology.hpp"
#include "sim/kernel/access.hpp"
#include "sim/pod/host_net.hpp"
#include "sim/pod/pod_config.hpp"
#include "sim/pod/rank_comm.hpp"

namespace podsim {

// Which rank simulates what (the documented rule, docs/parallel.md):
//  - GPUs in contiguous blocks of whole hosts: GPU g, of host h = g / pod.gpus_per_host, on
//    rank h * R / H for H hosts (one GPU per host: g * R / N);
//  - in a single-switch plane, plane p's switch on rank p mod R;
//  - in a leaf/spine plane, a leaf on the rank of the middle GPU below it, spine s of plane p
//    on rank (p + s) mod R.
struct PartitionPlan {
  std::uint32_t ranks = 1;
  std::vector<std::uint32_t> gpu;                   // by GPU
  std::vector<std::vector<std::uint32_t>> switch_;  // by plane, by switch index
};
PartitionPlan plan_partition(const PodConfig& cfg, std::uint32_t ranks);

// The pod cannot be split as asked (a cut path that takes no time leaves no lookahead): a
// config problem, not an internal error.
class PartitionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Counts of what a rank did across ranks (deterministic: for benchmarks and run.json).
struct PartitionCounters {
  std::uint64_t windows = 0;
  std::uint64_t packets_sent = 0, credits_sent = 0, notes_sent = 0;
  std::uint64_t bytes_sent = 0;
  std::uint64_t messages_sent = 0;  // non-empty messages to other ranks
  // Host nanoseconds in the windows' exchanges: MPI's own cost and the wait for the slowest
  // rank to end its window (a host clock: never part of the results).
  std::uint64_t sync_ns = 0;
  // The windows and sync_ns above, by the host phase this rank was in as each window's
  // exchange began (HostPhases::Phase: setup, access, after).
  struct ByPhase {
    std::uint64_t windows = 0, sync_ns = 0;
  };
  std::array<ByPhase, 3> by_phase{};
};

class Partition final : public CutSink {
 public:
  // `plan` must outlive the partition (the pod holds both).
  // `events`: this rank's event queue (a delivery checks that what it brings is due after
  // the window this rank has simulated).
  Partition(RankComm& comm, const PartitionPlan& plan, const FabricConfig& cfg, Fabric& fabric,
            PacketPool& pool, HostNet& net, Dispatcher& events);
  ~Partition() override;

  std::uint32_t rank() const { return comm_.rank(); }
  // The pod-wide lookahead: the least time, over every cut link and both directions, from
  // something a rank does to its first effect on the far end's rank (docs/parallel.md), and
  // at most half the host latency (a note must reach every rank before it takes effect). What
  // is not a GPU's or a switch's (the host network, the kernel's scenario steps) has it.
  Time lookahead() const { return lookahead_; }
  // What bounds the windows per component (docs/parallel.md, "Lookahead"): the least time from
  // serving an item of the component's queues to its first effect on another rank. A GPU acts
  // on the fabric only by sending packets (its ports return credits as packets arrive, not
  // from its own work), so its bound is its shortest path to a switch's input; a switch's is
  // its shortest path to the next hop or a credit return. Both at least lookahead() (any effect
  // on another rank crosses a cut) and at most the host latency (a note that work makes takes
  // effect that long after it).
  Time gpu_lookahead(std::uint32_t gpu) const { return gpu_lookahead_.at(gpu); }
  Time switch_lookahead(std::uint32_t plane, std::uint32_t index) const {
    return switch_lookahead_.at(plane).at(index);
  }
  // The least of each kind's (run.json).
  Time least_gpu_lookahead() const;
  Time least_switch_lookahead() const;
  std::size_t cut_links() const { return cut_count_; }

  // The end of a window (now): sends what crossed the cuts and the host notes made here,
  // delivers what the other ranks sent, and agrees on the next window with them. `effect`: the
  // earliest time anything waiting here can make something happen on another rank
  // (Dispatcher::next_effect, and the SystemC kernel's next activity plus lookahead()). The
  // agreement's `next` is the earliest such time of any rank, what this window sent included:
  // the next window ends just before it.
  // `phase`: the host phase this rank is in (HostPhases::Phase), for the counters only.
  RankComm::Agreement exchange(Time effect, bool stopped, std::size_t phase);
  RankComm& comm() { return comm_; }
  const PartitionCounters& counters() const { return counters_; }

  void packet(std::uint32_t link, std::uint8_t to, tlm::tlm_generic_payload& gp,
              Time head) override;
  void credits(std::uint32_t link, std::uint8_t to, TrafficClass tc, std::uint64_t tl,
               Time at) override;

 private:
  struct Cut {
    Link* link;
    std::uint32_t far_rank;  // the rank simulating the far end
    bool here;               // this rank simulates one end (else nothing may cross it here)
    // By the side a packet or credits are for: from a packet's head reaching that end to the
    // first thing it can make happen beyond it (that end's work, or its credit return), and
    // from credits reaching it to the first thing they can make happen.
    Time after_head[2];
    Time after_credits[2];
  };
  void deliver(const ByteBuffer& in);

  RankComm& comm_;
  const PartitionPlan& plan_;  // the pod's
  PacketPool& pool_;
  HostNet& net_;
  Dispatcher& events_;
  Time lookahead_;
  std::vector<Time> gpu_lookahead_;                  // by GPU
  std::vector<std::vector<Time>> switch_lookahead_;  // by plane, by switch index
  std::size_t cut_count_ = 0;
  std::vector<Cut> links_;            // by cut ID (every rank numbers the pod's links alike)
  std::vector<ByteBuffer> out_, in_;  // by rank
  // The earliest time at which what this window sent can make anything happen beyond where
  // it arrives (Cut::after_head, after_credits; a note: once it has taken effect).
  Time sent_effect_ = Time::max();
  // Payloads of accesses issued here that are on another rank and will come back (a request
  // awaiting its response): by access ID. Everything else that leaves is released here and
  // rebuilt from the pool on arrival. Open addressing: no allocation per access once it has
  // grown to the accesses in flight (a node-based map allocated and freed one per crossing).
  boost::unordered_flat_map<std::uint64_t, tlm::tlm_generic_payload*> away_;
  PartitionCounters counters_;
};

}  // namespace podsim
