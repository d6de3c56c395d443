// Vram: the GPU's HBM. Requests from the local GpuVm, the NPA MMU (remote accesses) and the
// firmware are served by address-interleaved channels, each a FIFO server with a bandwidth
// and an access latency. Data is stored functionally (sparse pages, zero until written), so
// what an importer writes, the exporter reads back.
#pragma once

#include <tlm_utils/multi_passthrough_target_socket.h>

#include <array>
#include <memory>
#include <unordered_map>
#include <vector>

#include "models/vram/page_allocator.hpp"
#include "models/vram/vram_config.hpp"
#include "sim/base/stats.hpp"
#include "sim/kernel/access.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim {

class Vram final : public sc_core::sc_module, public HasStats {
 public:
  // Bind any number of initiators; each gets its responses on its own backward path.
  tlm_utils::multi_passthrough_target_socket<Vram, 32, PodProtocol> in{"in"};

  Vram(sc_core::sc_module_name name, const VramConfig& cfg);

  VramPageAllocator& allocator() { return alloc_; }
  const VramPageAllocator& allocator() const { return alloc_; }

  // Functional (untimed) access for the driver model and tests.
  void read_bytes(std::uint64_t pa, unsigned char* out, std::size_t n) const;
  void write_bytes(std::uint64_t pa, const unsigned char* in, std::size_t n);

  // Device reset: every page free, contents gone.
  void reset();

  unsigned channel_of(std::uint64_t pa) const {
    return static_cast<unsigned>((pa / cfg_.interleave.count()) % cfg_.channels);
  }
  const StatGroup& stat_group() const override { return stats_; }
  const VramConfig& config() const { return cfg_; }

 private:
  struct Arrival {
    tlm::tlm_generic_payload* gp;
    int socket;
  };
  tlm::tlm_sync_enum fw(int id, tlm::tlm_generic_payload& gp, tlm::tlm_phase& ph,
                        sc_core::sc_time& d);
  void serve(const Arrival& a);

  using Page = std::array<unsigned char, 4096>;
  VramConfig cfg_;
  VramPageAllocator alloc_;
  std::vector<Time> channel_free_;
  std::unordered_map<std::uint64_t, std::unique_ptr<Page>> store_;
  TimedQueue<Arrival> arrivals_;
  Time xfer_busy_total_;

  StatGroup stats_;
  Counter reads_{stats_, "reads", "count", "read requests served"};
  Counter writes_{stats_, "writes", "count", "write requests served"};
  Counter bytes_read_{stats_, "bytes_read", "bytes", "bytes read"};
  Counter bytes_written_{stats_, "bytes_written", "bytes", "bytes written"};
  Distribution queue_delay_{stats_, "queue_delay", "ns", "time a request waited for its channel",
                            kPsPerNs};
  Formula utilisation_;
};

}  // namespace podsim
