// Vram: the GPU's HBM. Requests from the local GpuVm, the NPA MMU (remote accesses) and the
// firmware are served by address-interleaved channels (stacks x channels per stack), each a
// FIFO server with a bandwidth and an access latency. Data is stored functionally (sparse
// pages, zero until written), so what an importer writes, the exporter reads back.
//
// Freed pages are zeroed before reuse by an asynchronous clearing engine that writes them
// through the same channels (its traffic shows in the channel stats); an allocation that
// needs pages still being cleared waits for them.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "models/vram/data_store.hpp"
#include "models/vram/page_allocator.hpp"
#include "models/vram/vram_config.hpp"
#include "sim/core/measured_busy.hpp"
#include "sim/core/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/base_protocol.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class Vram final : public sc_core::sc_module, public HasStats {
 public:
  // Bind any number of initiators; each gets its responses on its own backward path. Through
  // nb_transport it takes podsim's packets (the Access extension says what to do); through
  // b_transport, any payload (a read or write by command, address and length; an atomic only
  // with the extension).
  tlm_utils::multi_passthrough_target_socket<Vram> in{"in"};

  using Pages = std::optional<std::vector<std::uint64_t>>;
  using AllocDone = std::function<void(Pages)>;

  Vram(sc_core::sc_module_name name, const VramConfig& cfg, Dispatcher& events, std::uint64_t seed);

  // `n` clean pages through `done`: now if there are enough, later when the clearing engine
  // has zeroed enough; nothing (at once) when fewer than `n` are free at all. Returns an ID
  // for cancel_allocation.
  std::uint64_t allocate(std::uint64_t n, AllocDone done);
  void cancel_allocation(std::uint64_t id);
  void free(std::span<const std::uint64_t> pages);
  VramPageAllocator& allocator() { return alloc_; }
  const VramPageAllocator& allocator() const { return alloc_; }

  // Functional (untimed) access for the driver model and tests (with functional_data off,
  // these reads give zeros and writes are dropped; timed loads leave their buffer unfilled).
  void read_bytes(std::uint64_t pa, unsigned char* out, std::size_t n) const;
  void write_bytes(std::uint64_t pa, const unsigned char* in, std::size_t n);
  const VramDataStore& data() const { return data_; }

  // `fn(access, at)` for each of the firmware mailbox's writes (Access::mailbox) served: it
  // has landed at `at`.
  void set_mailbox_watch(std::function<void(const Access&, Time)> fn) {
    mailbox_watch_ = std::move(fn);
  }

  // The page allocator, allocations waiting, and the clearing engine.
  void digest(Digest& d) const {
    alloc_.digest(d);
    d.add(waiters_.size()).add(clearing_);
  }
  // Device reset: every page free and clean (the device scrubs), contents gone.
  void reset();

  unsigned channel_of(std::uint64_t pa) const {
    const std::uint64_t n = pa >> interleave_shift_;
    if (n >> 32) return static_cast<unsigned>(n % channels_);
    // n % channels without a division (Lemire's fastmod; exact for 32-bit n and channels)
    return static_cast<unsigned>((static_cast<unsigned __int128>(channel_magic_ * n) * channels_) >>
                                 64);
  }
  const StatGroup& stat_group() const override { return stats_; }
  const VramConfig& config() const { return cfg_; }
  // When the last posted store (a data store that gets no response) landed here, and the last
  // measured one (Time{}: none). Its issuer counts a posted store done as it issues it, so the
  // run's access phase and measured window end no earlier than these.
  Time posted_landed() const { return posted_landed_; }
  Time measured_posted_landed() const { return m_posted_landed_; }

 private:
  struct Arrival {
    tlm::tlm_generic_payload* gp;
    int socket;
  };
  struct Waiter {
    std::uint64_t id, pages;
    Time since;
    AllocDone done;
  };
  void end_of_elaboration() override;
  tlm::tlm_sync_enum fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  void serve(const Arrival& a);
  static void fetch_packet(const Arrival& a) { prefetch_packet(a.gp); }
  // A blocking (loosely timed) access from any base-protocol initiator, plain payloads too.
  void b_transport(int id, tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
  // Counts, and moves the data of, `size` bytes at `pa` for `op` (`data`: the payload's, or
  // nullptr when its data is not kept: functional data off and not a flag).
  // Returns how many bytes of `data` it wrote (what a load or an atomic read; 0 for a store,
  // or with no data): what a response then carries (Access::data_bytes).
  std::uint16_t apply(AccessOp op, std::uint64_t pa, unsigned char* data, std::uint32_t size);
  // Takes `bytes` at `pa` through its channel no earlier than `earliest`; when it is done.
  Time occupy(std::uint64_t pa, std::uint64_t bytes, Time earliest);
  void clear_next();
  void page_cleared(std::uint64_t page);
  void serve_waiters();

  // What every request touches, first and together.
  StatGroup stats_;
  std::uint32_t channels_;
  std::uint64_t channel_magic_;  // 2^64 / channels, rounded up
  unsigned interleave_shift_;
  Time access_latency_;
  Time xfer_busy_total_;
  std::vector<Time> channel_free_;
  std::vector<Time> transfer_;  // a channel's transfer time by bytes / 64 (1 .. 8)
  Counter reads_{stats_, "reads", "count", "read requests served"};
  Counter writes_{stats_, "writes", "count", "write requests served"};
  Counter atomics_{stats_, "atomics", "count", "atomic requests served (a read and a write)"};
  Counter bytes_read_{stats_, "bytes_read", "bytes", "bytes read"};
  Counter bytes_written_{stats_, "bytes_written", "bytes", "bytes written by requests"};
  // (registered in this order: stats.json lists them so)
  Counter bytes_cleared_{stats_, "bytes_cleared", "bytes",
                         "bytes the clearing engine zeroed (freed pages, before reuse)"};
  Counter alloc_waits_{stats_, "allocation_waits", "count",
                       "allocations that waited for pages to be cleared"};
  Distribution alloc_wait_{stats_, "allocation_wait", "ns", "how long those allocations waited",
                           kPsPerNs};
  Distribution queue_delay_{stats_, "queue_delay", "ns", "time a request waited for its channel",
                            kPsPerNs};
  Series channel_bytes_;
  bool functional_data_;
  std::function<void(const Access&, Time)> mailbox_watch_;

  VramConfig cfg_;
  VramPageAllocator alloc_;
  VramDataStore data_;
  TimedQueue<Arrival> arrivals_;
  std::vector<ResponseLane> responses_;  // in's response sides, by binding
  struct Cleared {
    std::uint64_t page, epoch;
  };
  TimedQueue<Cleared> cleared_;
  bool clearing_ = false;
  std::uint64_t epoch_ = 0;  // clearing work from before a reset is dropped
  std::uint64_t seed_;
  Time engine_free_;
  std::deque<Waiter> waiters_;
  std::uint64_t next_waiter_ = 1;

  Formula utilisation_;
  Formula balance_;
  Formula pinned_;
  MeasuredBusy measured_;
  Time posted_landed_, m_posted_landed_;  // rarely touched: posted stores only
};

}  // namespace podsim
