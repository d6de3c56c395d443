// The amdgpu UALink driver of one GPU, as plain C++ coroutines: GEM objects and buffer
// objects, the export and import tables, one connection per peer, the NPA range allocator,
// revoke and release, connection reset, device reset — following
// docs/reference/amdgpu-ualink-protocol.md, with the snapshot's apparent bugs fixed
// unless DriverConfig::reintroduce_bugs puts them back.
//
// Contexts, as in the kernel: user calls (ioctls) run in the calling process's context; a
// single IRQ worker handles protocol messages one at a time; a cleanup worker revokes
// exports; the unpinned design adds an eviction worker. They interleave only where they
// block (co_await), and re-check state after blocking.
//
// The tables are their own classes, each keeping its state and rules: the export table
// (export_table.hpp), the import table (import_table.hpp), the connections (connections.hpp);
// so are the workers' queues and their loop (work_queue.hpp). The Driver runs the contexts,
// sends the messages and asks the parts.
//
// The user API returns GEM handles, 128-bit UALink handles and dma-buf file descriptors;
// never an NPA.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver_model/connections.hpp"
#include "driver_model/coro.hpp"
#include "driver_model/driver_config.hpp"
#include "driver_model/driver_env.hpp"
#include "driver_model/errno.hpp"
#include "driver_model/export_table.hpp"
#include "driver_model/host.hpp"
#include "driver_model/import_table.hpp"
#include "driver_model/messages.hpp"
#include "driver_model/npa_allocator.hpp"
#include "driver_model/work_queue.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/core/digest.hpp"
#include "sim/core/rng.hpp"
#include "sim/core/stats.hpp"

namespace podsim::driver {

enum class Domain : std::uint8_t { Vram, Gtt, Npa };

using ProcessId = std::uint16_t;  // a process on this GPU; also its GPUVM VMID
using GemHandle = std::uint32_t;
using Fd = std::int32_t;

// The vPod this GPU belongs to: who may import from whom.
struct VpodInfo {
  std::uint32_t id = 0;
  std::uint32_t size = 0;     // as committed (0: the members' count)
  std::vector<bool> members;  // by accelerator ID
  bool contains(AccelId a) const { return a < members.size() && members[a]; }
};

// Accelerator states (reference §1). The snapshot sets only the first three.
enum class AccelState : std::uint8_t {
  Unconfigured = 0,
  Configured = 1,
  Ready = 2,
  Active = 3,
  Error = 4
};

// The pPod as the PSP reports it: this accelerator's ID and the pod's size.
struct PpodInfo {
  AccelId accel_id = 0;
  std::uint32_t size = 0;
};

// What is still held, for the end-of-run invariant check.
struct Holdings {
  std::uint64_t buffers = 0, pins = 0, npa_ranges = 0, exports = 0, revoking = 0, imports = 0,
                handles = 0, fds = 0, waiters = 0, busy_tasks = 0;
  struct Detail {
    std::uint64_t bo;
    std::string text;
  };
  std::vector<Detail> details;  // one line per buffer still allocated
  // Imports still held, the buffer each holds (0: none yet), and whether the connection to
  // its exporter is still the one its NPA_REQ went out on (else a reset should have taken it).
  struct Import {
    UalinkHandle handle;
    std::uint64_t bo;
    bool same_connection;
  };
  std::vector<Import> held_imports;
  // The exports still alive and whom each is granted to: (handle lo, importer).
  std::vector<std::pair<std::uint64_t, AccelId>> grants;
};

// Where a fault step makes the driver fail: the exporter's handling of an NPA_REQ (answered
// NPA_FAIL ERROR, as the snapshot does for a failed pin or mapping), or the importer's
// allocation of its NPA-domain buffer once the exporter granted the range (ENOMEM), or a new
// export's allocation of its node and dma-buf (ENOMEM, nothing exported).
enum class FailPoint : std::uint8_t { Pin, Map, ImportAlloc, ExportAlloc, Count };

class Driver {
 public:
  Driver(const DriverConfig& cfg, AccelId self, VpodInfo vpod, NpaAddrMode mode, Rng rng,
         DriverEnv& env);
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  // ---- user API: one ioctl each, in process `p`'s context ---------------------------------
  // A buffer of `bytes` (rounded up to whole pages). User mode may not ask for the NPA domain
  // (EINVAL); a full VRAM gives ENOMEM.
  Task<Result<GemHandle>> gem_create(ProcessId p, Bytes bytes, Domain domain);
  // Drops a GEM handle. When a buffer's last handle goes, its export is revoked.
  Task<Errno> gem_close(ProcessId p, GemHandle gem);
  // DRM_IOCTL_AMDGPU_UALINK_HANDLE, op EXPORT. A new export allocates its node and dma-buf
  // (export_alloc_latency, a sleep) under the export lock, so a concurrent export of the same
  // buffer gets the same handle (B8: no lock, and it can make a second one).
  Task<Result<UalinkHandle>> export_handle(ProcessId p, GemHandle gem);
  // DRM_IOCTL_AMDGPU_UALINK_HANDLE, op IMPORT: a dma-buf fd for the remote buffer.
  Task<Result<Fd>> import_handle(ProcessId p, UalinkHandle h);
  // PRIME import of a dma-buf fd: a GEM handle for the same buffer (the process's own, if it
  // has one for that buffer already).
  Task<Result<GemHandle>> prime_fd_to_handle(ProcessId p, Fd fd);
  // PRIME export of a GEM handle: a dma-buf fd for its buffer (ENOENT: no such handle).
  Task<Result<Fd>> prime_handle_to_fd(ProcessId p, GemHandle gem);
  // Not an ioctl: fd `fd` of process `from` passed to process `to` over a Unix socket
  // (SCM_RIGHTS), where it is a new fd for the same buffer; `from` keeps its own (EINVAL: no
  // such fd).
  Result<Fd> pass_fd(ProcessId from, Fd fd, ProcessId to);
  Task<Errno> close_fd(ProcessId p, Fd fd);
  // GEM_VA MAP / UNMAP (readable | writeable) of the whole buffer at `va`.
  Task<Errno> gem_va_map(ProcessId p, GemHandle gem, std::uint64_t va);
  Task<Errno> gem_va_unmap(ProcessId p, GemHandle gem, std::uint64_t va);
  // CPU mapping: an NPA buffer cannot be CPU-mapped (EINVAL).
  Task<Errno> gem_cpu_map(ProcessId p, GemHandle gem);
  // The process exits: its mappings, fds and GEM handles go, as the kernel closes them.
  Task<void> process_exit(ProcessId p);

  // Faults, for studies (scenario `fault` steps): the next `count` pins of an exported buffer
  // for an importer (Pin), or mappings of a new NPA range (Map), fail; the request is answered
  // NPA_FAIL ERROR with everything undone.
  void fail_next(FailPoint point, std::uint32_t count);
  // A signal to process `p`: an import waiting for its answer (the one interruptible wait)
  // ends with ERESTARTSYS, with no connection reset; a process not waiting is not affected.
  void signal(ProcessId p);

  // ---- bring-up (reference §1): privileged calls, not a process's -------------------------
  // A Driver starts READY with the vPod it was made with (what direct bring-up leaves);
  // unconfigure() makes it a freshly loaded driver, UNCONFIGURED, for the calls below.
  void unconfigure();
  AccelState accel_state() const { return state_; }
  const VpodInfo& vpod() const { return vpod_; }
  // pPod commit: CONFIGURED when 1 <= size <= accel_max and this accelerator's ID < size,
  // otherwise UNCONFIGURED (the call itself succeeds either way, as in the snapshot); a
  // driver READY or above is deactivated first.
  Task<Errno> ppod_commit(PpodInfo p);
  // vPod commit: EINVAL unless CONFIGURED or above, id < 256, 1 <= size <= the pPod's, as many
  // members as size, and this accelerator among them.
  Task<Errno> vpod_commit(VpodInfo v);
  // CONFIGURED with a vPod -> READY: the PSP enables incoming NPA translation, the tables
  // start empty (every connection NOT_READY), the rings' receive pages are mapped, and the
  // firmware loads the rings' metadata, polled for READY every firmware_poll_interval up to
  // firmware_poll_limit times (ETIMEDOUT, everything undone: those READY deactivated). EINVAL
  // when not CONFIGURED or no vPod was committed; nothing to do when READY already.
  Task<Errno> activate();
  // READY -> CONFIGURED: every connection reset (no messages: peers are not told), NPA
  // translation off, the firmware halted, the rings unmapped. EINVAL below READY.
  Task<Errno> deactivate();
  const Distribution& activate_time() const { return activate_time_; }
  // This accelerator is one of `host`'s (which must outlive it), joined before any bring-up
  // call; without a host it is alone on one of its own. Throws past the host's 8.
  void join(Host& host);
  // The pPod the pod's bring-up commits (the PSP's): what a driver made READY starts with, and
  // what one reset while it had none comes back with.
  void set_home_ppod(PpodInfo p) {
    home_ppod_ = p;
    ppod_ = p;
  }
  // One accelerator's part of a host's bring-up call (bring_up.cpp).
  struct Part;

  // ---- direct setup ------------------------------------------------------------------------
  // The state the user API and the protocol leave behind, reached without their messages or
  // their time (workload.setup = direct): each call makes the same table, page-table and pin
  // changes as its protocol counterpart, through the same code, and returns what it would.
  // The caller pairs them as the protocol does (a connection on both sides, a grant at the
  // exporter for each import).
  Result<GemHandle> direct_gem_create(ProcessId p, std::vector<std::uint64_t> vram_pages);
  Errno direct_gem_va_map(ProcessId p, GemHandle gem, std::uint64_t va);
  Result<UalinkHandle> direct_export(ProcessId p, GemHandle gem);
  // As HELLO and HELLO_ACK leave a connection: ESTABLISHED, one generation on.
  void direct_connect(AccelId peer);
  struct NpaGrant {
    std::uint32_t npa_page = 0;  // in the exporter's window (as NPA_RSP carries it)
    std::uint32_t size_pages = 0;
  };
  // As an NPA_REQ from `importer` for `h` leaves the exporter (pinned, range mapped,
  // importer recorded): the NPA_RSP it would send, or the errno the importer would get.
  Result<NpaGrant> direct_grant(AccelId importer, const UalinkHandle& h);
  // As the import of `h` ends at the importer once the exporter granted `g`: a dma-buf fd.
  Result<Fd> direct_import(ProcessId p, const UalinkHandle& h, const NpaGrant& g);
  Result<GemHandle> direct_prime_fd_to_handle(ProcessId p, Fd fd) { return gem_of_fd(p, fd); }
  Errno direct_close_fd(ProcessId p, Fd fd) { return drop_fd(p, fd); }

  // ---- firmware ---------------------------------------------------------------------------
  // An INT command from `from`'s driver; the IRQ worker handles messages in arrival order.
  void on_interrupt(AccelId from, const Dwords& dw);

  // ---- device reset -----------------------------------------------------------------------
  // The device is reset: everything in flight is abandoned and all driver state is lost (the
  // shell resets the hardware). It comes back with fresh state, as a driver reload would.
  void device_reset();
  // The device is down (from a reset for its down time) or up again: a local accelerator that
  // is down takes no part in its host's bring-up calls; back up, with after_reset = announce,
  // it connects to every former importer never told of the reset.
  void set_down(bool down);
  void set_ualink_active(bool active) {
    state_ = active ? AccelState::Ready : AccelState::Configured;
  }

  // ---- inspection -------------------------------------------------------------------------
  AccelId self() const { return self_; }
  ConnState connection(AccelId peer) const { return conns_.state(peer); }
  std::uint32_t generation(AccelId peer) const { return conns_.generation(peer); }
  std::size_t exports() const { return exports_.size(); }
  std::size_t imports() const { return imports_.size(); }
  std::size_t revoking() const { return exports_.revoking(); }
  std::uint32_t pin_count(ProcessId p, GemHandle gem) const;
  // The size of a buffer the process holds a GEM handle to (0 if none).
  Bytes gem_size(ProcessId p, GemHandle gem) const;
  std::size_t importer_count(const UalinkHandle& h) const;
  ImportState import_state(const UalinkHandle& h) const;
  // The NPA_FAIL reason stored on the import node of `h` (lo and hi), if any.
  std::optional<FailReason> import_failure(const UalinkHandle& h) const;
  // No message queued or being handled, no revoke pending or running.
  bool quiescent() const;
  // Everything still held: buffers, pins, NPA ranges, table entries, handles, waiters.
  Holdings holdings() const;
  // The driver's state: buffers, processes' handles and fds, the export and import tables,
  // connections and their generations, NPA windows, pending work, the handle generator.
  void digest(Digest& d) const;
  const StatGroup& stats() const { return stats_; }
  const Distribution& import_time() const { return import_time_; }
  const Distribution& import_repeat_time() const { return import_repeat_time_; }
  const Distribution& export_time() const { return export_time_; }
  const Distribution& revoke_time() const { return revoke_time_; }
  std::uint64_t messages_sent(MsgType t) const;

 private:
  struct Mapping {
    ProcessId process;
    std::uint64_t va;
  };
  struct Bo {
    std::uint64_t id = 0;
    Domain domain = Domain::Vram;
    std::uint64_t pages = 0;
    std::vector<std::uint64_t> vram_pages;  // VRAM: scattered pages
    std::uint64_t npa_page = 0;             // NPA: first NPA page (exporter ID at bits 38:29)
    std::uint64_t grant = 0;         // NPA: the export's handle lo (its PTEs' tag, for tag checks)
    std::uint32_t refs = 0;          // handles, fds, VA mappings, export/import nodes, dma-buf
    std::uint32_t handle_count = 0;  // user GEM handles
    std::uint32_t pins = 0;
    std::optional<UalinkHandle> ualink;  // set while exported
    std::vector<Mapping> mappings;
    bool evicted = false;  // NPA buffer whose access was revoked
  };
  using ExportPtr = ExportTable::Ptr;
  using ImportPtr = ImportTable::Ptr;
  struct Process {
    std::map<GemHandle, std::uint64_t> gems;
    std::map<Fd, std::uint64_t> fds;
    GemHandle next_gem = 1;
    Fd next_fd = 3;
    ImportPtr waiting;               // the import whose answer it waits for (interruptibly), if any
    WaitQueue* handshake = nullptr;  // or the handshake it waits for (interruptibly)
    bool signalled = false;          // a signal ended that wait
  };
  struct Interrupt {  // a protocol message as firmware delivered it
    AccelId from;
    Dwords dw;
  };

  // time and blocking
  Sleep sleep(Time d) { return Sleep(env_, d); }
  Task<Errno> send(AccelId dst, Message m);
  Task<Errno> shootdown(AccelId dst);
  // workers
  Task<void> eviction_worker();
  void start_workers();

 public:
  // This GPU is simulated elsewhere (another rank of a split pod holds it; this copy only has
  // to exist): its workers stop, so nothing here acts on its own (the unpinned design's
  // eviction worker would otherwise move pages and send shootdowns from this copy too).
  void go_dormant() { runner_.cancel_all(); }

 private:
  std::size_t workers() const;  // the tasks that always run
  // connections
  // `caller`: the process whose call waits for the handshake, interruptibly (a signal ends
  // the wait with ERESTARTSYS, the connection back to NOT_READY: reference §3); none for the
  // driver's own setups.
  Task<Errno> setup(AccelId peer, bool wait, std::optional<ProcessId> caller = std::nullopt);
  void established(AccelId peer);
  // A connection just (re-)established at a new generation: anything imported from the peer
  // on an older one is a violation (it outlived its connection).
  void check_stale_imports(AccelId peer);
  Task<void> reset_connection(AccelId peer, ConnState to, std::uint32_t gen);
  // messages
  Task<void> handle(AccelId from, Dwords dw);
  Task<void> on_hello(AccelId from, const Message& m);
  void on_hello_ack(AccelId from);
  Task<void> on_npa_req(AccelId from, const Message& m);
  void on_npa_rsp(AccelId from, const Message& m);
  void on_npa_fail(AccelId from, const Message& m);
  Task<void> on_npa_revoke(AccelId from, const Message& m);
  void on_npa_release(AccelId from, const Message& m);
  // the synchronous cores of the user calls and messages (shared with direct setup)
  GemHandle create_gem(ProcessId p, Domain domain, std::uint64_t pages,
                       std::vector<std::uint64_t> vram);
  Errno map_va(ProcessId p, GemHandle gem, std::uint64_t va);
  Result<GemHandle> gem_of_fd(ProcessId p, Fd fd);
  Errno drop_fd(ProcessId p, Fd fd);
  Result<UalinkHandle> create_export(ProcessId p, GemHandle gem);
  // An export's checks: an error, or the buffer's handle if it has one; nothing if a new
  // export is to be made.
  std::optional<Result<UalinkHandle>> export_known(ProcessId p, GemHandle gem);
  Result<UalinkHandle> insert_export(Bo& bo);
  RangeGrant grant_range(ExportNode& node, AccelId from, std::uint64_t pages);
  void map_npa_pages(const Bo& bo, std::uint64_t key_base, std::uint64_t tag);
  Fd finish_import(ProcessId p, ImportNode& node);
  // export side
  void revoke(Bo& bo);
  void put_export(const ExportPtr& node);
  Task<void> cleanup(ExportPtr node);
  std::uint64_t npa_key(AccelId importer, std::uint64_t window_page) const;
  Task<void> map_range(const Bo& bo, std::uint64_t key_base, std::uint64_t tag);
  void unmap_range(std::uint64_t key_base, std::uint64_t pages);
  void free_range(AccelId importer, std::uint64_t window_page, std::uint64_t pages,
                  std::uint64_t tag);
  void pin(Bo& bo);
  void unpin(Bo& bo);
  NpaRangeAllocator& window(AccelId importer);
  // import side
  Task<void> invalidate_import(const ImportPtr& node);
  // buffers and handles
  Bo* bo_of(ProcessId p, GemHandle gem);
  std::uint64_t new_bo(Domain d, std::uint64_t pages);
  GemHandle new_gem(ProcessId p, std::uint64_t bo);
  Fd new_fd(ProcessId p, std::uint64_t bo);
  void unref(std::uint64_t bo);
  void drop_handle(std::uint64_t bo);  // a GEM handle goes
  UalinkHandle new_handle();
  Process& process(ProcessId p) { return processes_[p]; }
  std::string describe(const Bo& bo) const;

  DriverConfig cfg_;
  Bugs bugs_;  // cfg_.reintroduce_bugs, read once
  std::array<std::uint32_t, static_cast<std::size_t>(FailPoint::Count)> failures_{};  // left
  bool bug(Bug b) const { return bugs_.test(static_cast<std::size_t>(b)); }
  // A fault step's failure due at `point`, if one is left (and one fewer left).
  bool take_failure(FailPoint point);
  AccelId self_;
  VpodInfo vpod_;
  NpaAddrMode mode_;
  Rng rng_;
  DriverEnv& env_;
  Task<void> deactivate_now();
  Task<void> deactivate_host();
  Task<void> activation_part(Time t0, AccelId by, std::shared_ptr<Part> part);
  Task<void> deactivation_part(std::shared_ptr<Part> part);
  void undo_activation();
  // A bring-up call: after the ioctl's latency it runs as a task of the host's under the
  // host's lock (host_call), the caller waiting for its result.
  enum class BringUp : std::uint8_t { PpodCommit, VpodCommit, Activate, Deactivate };
  struct BringUpArgs {
    BringUp call;
    Time t0;  // when the ioctl was made
    PpodInfo ppod{};
    VpodInfo vpod{};
  };
  Task<Errno> bring_up(BringUpArgs a);
  Task<void> host_call(BringUpArgs a, std::uint64_t epoch, std::shared_ptr<Part> call);
  Task<Errno> ppod_commit_locked(PpodInfo p, std::uint64_t epoch);
  Task<Errno> activate_locked(Time t0);
  Errno commit_vpod(VpodInfo v);
  void drop_connections();
  // This accelerator and its local accelerators (host.hpp) in `state`, by accelerator ID (not
  // those down after a reset: they come back as the reset leaves them).
  std::vector<Driver*> local_accels(AccelState state);
  // The local-accelerator checks of a vPod commit against the host's others (EINVAL).
  Errno check_local_accels(const VpodInfo& v) const;
  // A driver not joined to a host is alone on one of its own.
  std::unique_ptr<Host> own_host_ = std::make_unique<Host>();
  Host* host_ = own_host_.get();
  // Device resets so far: a bring-up call made before a reset is not the fresh driver's.
  std::uint64_t epoch_ = 0;
  // after_reset = quarantine or announce: kept across device resets, as the firmware would.
  // The NPA ranges given out before (by window key) are reserved until every importer they
  // had been granted to has connected again (its stale imports dropped then).
  struct Quarantine {
    struct Range {
      AccelId window;
      std::uint64_t start, pages;
    };
    std::vector<Range> ranges;
    std::vector<bool> pending;  // former importers not connected again yet
    std::size_t left = 0;
  };
  Quarantine quarantine_;
  // NPA_RSPs being sent, by importer (their grants are in no table until sent).
  std::vector<std::uint16_t> granting_ = std::vector<std::uint16_t>(kMaxAccels, 0);
  void quarantine_on_reset();
  void quarantine_connected(AccelId peer);
  Task<void> announce_to(AccelId peer);
  void came_back();
  bool down_ = false;
  AccelState state_ = AccelState::Ready;
  std::optional<PpodInfo> ppod_;
  PpodInfo home_ppod_;
  bool vpod_committed_ = true;
  bool ualink_active() const { return state_ == AccelState::Ready || state_ == AccelState::Active; }

  std::unordered_map<std::uint64_t, Bo> bos_;
  std::map<ProcessId, Process> processes_;
  ExportTable exports_;  // exp_xa and handle_invalid_xa
  ImportTable imports_;  // imp_xa
  Connections conns_;
  std::map<AccelId, NpaRangeAllocator> windows_;
  WorkQueue<Interrupt> irq_queue_;      // the IRQ worker's: messages in arrival order
  WorkQueue<ExportPtr> cleanup_queue_;  // the cleanup worker's: exports to revoke
  std::uint64_t next_bo_ = 1;
  Mutex export_lock_;  // an export's check and insert (B8 fixed)

  StatGroup stats_;
  Counter exports_created_{stats_, "exports", "count", "buffers exported (new UALink handles)"};
  Counter exports_repeated_{stats_, "exports_repeated", "count",
                            "export calls answered with the buffer's existing handle"};
  Counter imports_first_{stats_, "imports_first", "count",
                         "imports that asked the exporter for an NPA range"};
  Counter imports_repeated_{stats_, "imports_repeated", "count",
                            "imports answered from the import table"};
  Counter import_errors_{stats_, "import_errors", "count", "imports that returned an error"};
  Counter revokes_{stats_, "revokes", "count", "exports revoked (last GEM handle closed)"};
  Counter releases_missing_{stats_, "releases_missing", "count",
                            "importers that did not answer NPA_REVOKE in time (reset)"};
  Counter releases_unexpected_{stats_, "releases_unexpected", "count",
                               "NPA_RELEASE from an importer that was not pending"};
  Counter connection_resets_{stats_, "connection_resets", "count", "connections reset"};
  Counter unsolicited_{stats_, "unsolicited", "count",
                       "NPA_RSP/FAIL/REVOKE for no matching import (ignored)"};
  Counter dropped_{stats_, "dropped_not_established", "count",
                   "requests dropped because the connection was not established"};
  Counter refused_{stats_, "refused_unauthorized", "count",
                   "requests from accelerators outside this GPU's vPod"};
  Counter send_failures_{stats_, "send_failures", "count",
                         "messages not delivered (ring full, not consumed, firmware error)"};
  Counter shootdowns_{stats_, "remote_shootdowns", "count", "remote TLB shootdowns sent"};
  Counter pins_{stats_, "pins", "count",
                "times an exported buffer was pinned for an importer (pinned design: once per "
                "importer and connection)"};
  Counter unpins_{stats_, "unpins", "count",
                  "times an exported buffer was unpinned (a release, a revoke, a reset)"};
  Counter evictions_{stats_, "evictions", "count",
                     "exported pages migrated (unpinned design only)"};
  Counter device_resets_{stats_, "device_resets", "count", "resets of this device"};
  Counter injected_failures_{stats_, "injected_failures", "count",
                             "pins or NPA range mappings a fault step made fail"};
  std::vector<std::unique_ptr<Counter>> sent_by_type_;
  std::vector<std::unique_ptr<Counter>> received_by_type_;
  Distribution export_time_{stats_, "export_time", "ns", "duration of export calls", kPsPerNs};
  Distribution import_time_{stats_, "import_time", "ns",
                            "first imports: from the ioctl to the dma-buf fd", kPsPerNs};
  Distribution import_repeat_time_{stats_, "import_repeat_time", "ns",
                                   "repeated imports: from the ioctl to the dma-buf fd", kPsPerNs};
  Distribution revoke_time_{stats_, "revoke_time", "ns",
                            "from the last handle's close to the last importer's release",
                            kPsPerNs};
  Distribution activate_time_{stats_, "activate_time", "ns",
                              "activations: from the call to READY (firmware load included)",
                              kPsPerNs};

  TaskRunner runner_;  // last: destroyed first, while what its tasks wait on still exists
};

}  // namespace podsim::driver
