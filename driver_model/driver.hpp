// The amdgpu UALink driver of one GPU, as plain C++: GEM objects and buffer objects, the
// export and import tables, the per-peer connection state machine and the NPA range
// allocator, following ../shared/reference/amdgpu-ualink-protocol.md. It has no notion of
// SystemC: it acts through a DriverEnv, and time passes only by what it spends there.
//
// The user API returns GEM handles, 128-bit UALink handles and dma-buf file descriptors;
// never an NPA.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver_model/driver_config.hpp"
#include "driver_model/driver_env.hpp"
#include "driver_model/errno.hpp"
#include "driver_model/messages.hpp"
#include "driver_model/npa_allocator.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/base/rng.hpp"
#include "sim/base/stats.hpp"

namespace podsim::driver {

enum class Domain : std::uint8_t { Vram, Gtt, Npa };

enum class ConnState : std::uint8_t { NotReady = 0, InProgress = 1, Pending = 2, Established = 3 };
std::string_view conn_state_name(ConnState s);

enum class ImportState : std::uint8_t { NotReady, Pending, Ready, Teardown };

using GemHandle = std::uint32_t;
using Fd = std::int32_t;
using ImportCallback = std::function<void(Result<Fd>)>;

class Driver {
 public:
  Driver(const DriverConfig& cfg, AccelId self, NpaAddrMode mode, Rng rng, DriverEnv& env);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // ---- user API (each call is one ioctl) --------------------------------------------------
  // A buffer of `bytes` (rounded up to whole pages) in `domain`; user mode may not ask for
  // the NPA domain (EINVAL), and a full VRAM gives ENOMEM.
  Result<GemHandle> gem_create(Bytes bytes, Domain domain);
  // DRM_IOCTL_AMDGPU_UALINK_HANDLE, op EXPORT.
  Result<UalinkHandle> export_handle(GemHandle gem);
  // DRM_IOCTL_AMDGPU_UALINK_HANDLE, op IMPORT. Completes through `done` with a dma-buf fd,
  // at once for a cached import or an error, later when the exporter has answered.
  void import_handle(const UalinkHandle& h, ImportCallback done);
  // PRIME import of a dma-buf fd: a GEM handle for the same buffer object.
  Result<GemHandle> gem_from_fd(Fd fd);
  Errno close_fd(Fd fd);
  // GEM_VA MAP (readable | writeable) of the whole buffer at `va` in address space `vmid`.
  Errno gem_va_map(GemHandle gem, std::uint64_t va, std::uint16_t vmid);
  // CPU mapping of a buffer: an NPA buffer cannot be CPU-mapped (EINVAL).
  Errno gem_cpu_map(GemHandle gem);

  void set_ualink_active(bool active) { ualink_active_ = active; }

  // ---- firmware and timers -----------------------------------------------------------------
  // An INT command from `from`'s driver arrived (after firmware and interrupt latency).
  void on_message(AccelId from, const Dwords& dw);
  void on_timer(std::uint64_t token);

  // ---- inspection --------------------------------------------------------------------------
  AccelId self() const { return self_; }
  ConnState connection(AccelId peer) const { return conns_[peer].state; }
  std::uint32_t generation(AccelId peer) const { return conns_[peer].generation; }
  std::size_t exports() const { return exports_.size(); }
  std::size_t imports() const { return imports_.size(); }
  std::uint32_t pin_count(GemHandle gem) const;
  // Importers the exporter has handed an NPA range for this export.
  std::size_t importer_count(const UalinkHandle& h) const;
  const NpaRangeAllocator& npa_allocator(AccelId window_owner) const;
  const StatGroup& stats() const { return stats_; }
  const Distribution& import_time() const { return import_time_; }
  const Distribution& export_time() const { return export_time_; }

 private:
  struct Bo {
    std::uint64_t id = 0;
    Domain domain = Domain::Vram;
    std::uint64_t pages = 0;
    std::vector<std::uint64_t> vram_pages;  // VRAM domain: scattered pages
    std::uint64_t npa_page = 0;             // NPA domain: first NPA page (exporter ID at 38:29)
    std::uint32_t refs = 0;                 // GEM handles, dma-bufs and tables holding it
    std::uint32_t handle_count = 0;         // user GEM handles
    std::uint32_t pins = 0;
    std::optional<UalinkHandle> ualink;  // set once exported
  };
  struct ExportNode {
    UalinkHandle handle;
    std::uint64_t bo = 0;
    std::vector<bool> importers;             // bit I: importer I holds an NPA range
    std::vector<std::uint32_t> generations;  // connection generation when I was added
    // Source-aliasing: one shared range. Source-identification: one per importer.
    std::optional<std::uint64_t> shared_npa;
    std::map<AccelId, std::uint64_t> ident_npa;
  };
  struct ImportNode {
    UalinkHandle handle;
    ImportState state = ImportState::NotReady;
    bool waiting_connection = false;
    std::uint64_t npa_page = 0;  // full NPA page (exporter ID at 38:29)
    std::uint32_t size_pages = 0;
    std::uint64_t bo = 0;
    ImportCallback done;
    Time started;
    std::uint64_t timer = 0;
  };
  struct Connection {
    ConnState state = ConnState::NotReady;
    std::uint32_t generation = 0;
    std::uint64_t timer = 0;
  };
  struct File {
    std::uint64_t bo = 0;
  };
  enum class SetupResult { Ready, Waiting, Again, Failed };
  enum class TimerKind : std::uint8_t { Hello, Response };

  // connections
  SetupResult setup(AccelId peer);
  void established(AccelId peer);
  void reset_connection(AccelId peer, ConnState to);
  // messages
  bool send(AccelId dst, const Message& m);
  void on_hello(AccelId from, const Message& m);
  void on_hello_ack(AccelId from);
  void on_npa_req(AccelId from, const Message& m);
  void on_npa_rsp(AccelId from, const Message& m);
  void on_npa_fail(AccelId from, const Message& m);
  // imports
  void send_request(ImportNode& node);
  void finish_import(std::uint64_t lo, Errno err);
  // buffer objects
  Bo* bo_of_gem(GemHandle gem);
  std::uint64_t new_bo(Domain d, std::uint64_t pages);
  GemHandle new_gem(std::uint64_t bo);
  Fd new_fd(std::uint64_t bo);
  void unref_bo(std::uint64_t bo);
  UalinkHandle new_handle();
  std::uint64_t start_timer(TimerKind kind, std::uint64_t subject, Time delay);
  void map_npa_range(const Bo& bo, std::uint64_t key_base);
  NpaRangeAllocator& window(AccelId importer);

  DriverConfig cfg_;
  AccelId self_;
  NpaAddrMode mode_;
  Rng rng_;
  DriverEnv& env_;
  bool ualink_active_ = true;

  std::unordered_map<std::uint64_t, Bo> bos_;
  std::map<GemHandle, std::uint64_t> gems_;
  std::map<Fd, File> files_;
  std::unordered_map<std::uint64_t, ExportNode> exports_;  // by handle lo
  std::unordered_map<std::uint64_t, ImportNode> imports_;  // by handle lo
  std::vector<Connection> conns_;
  std::map<AccelId, NpaRangeAllocator> windows_;  // alias mode: one, keyed by self
  std::map<std::uint64_t, std::pair<TimerKind, std::uint64_t>> timers_;
  std::uint64_t next_bo_ = 1, next_timer_ = 1;
  GemHandle next_gem_ = 1;
  Fd next_fd_ = 3;

  StatGroup stats_;
  Counter exports_created_{stats_, "exports", "count", "buffers exported (new UALink handles)"};
  Counter exports_repeated_{stats_, "exports_repeated", "count",
                            "export calls answered with the buffer's existing handle"};
  Counter imports_first_{stats_, "imports_first", "count",
                         "imports that asked the exporter for an NPA range"};
  Counter imports_repeated_{stats_, "imports_repeated", "count",
                            "imports answered from the import table"};
  Counter import_errors_{stats_, "import_errors", "count", "imports that returned an error"};
  Counter ring_full_{stats_, "send_ring_full", "count", "messages not sent: ring full"};
  std::vector<std::unique_ptr<Counter>> sent_by_type_;
  std::vector<std::unique_ptr<Counter>> received_by_type_;
  Distribution export_time_{stats_, "export_time", "ns", "duration of export calls", kPsPerNs};
  Distribution import_time_{stats_, "import_time", "ns",
                            "first imports: from the ioctl to the dma-buf fd", kPsPerNs};
  Distribution import_repeat_time_{stats_, "import_repeat_time", "ns",
                                   "repeated imports: from the ioctl to the dma-buf fd", kPsPerNs};
};

}  // namespace podsim::driver
