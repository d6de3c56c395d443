// What the GPUs of a pod do: the all-to-all default, or a scenario of timed steps that
// scripts the driver's user API per GPU process (allocate, export, pass a handle, import,
// map, run an access phase, close, exit, reset a node), each step able to expect an errno.
#pragma once

#include <array>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "driver_model/errno.hpp"
#include "models/compute/collective.hpp"
#include "models/compute/compute_config.hpp"
#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim {

enum class StepOp : std::uint8_t {
  Alloc,       // gem_create: size, [domain], name
  Export,      // UALINK_HANDLE EXPORT: buffer, name
  SendHandle,  // pass a handle to another GPU out of band (what MPI does): handle, to, [as]
  SendFd,      // PRIME export of a buffer, the fd passed to another process: buffer, to_process
  Import,      // UALINK_HANDLE IMPORT: handle, name (a dma-buf fd)
  Map,         // PRIME import of fd (or a local buffer) + GEM_VA MAP: fd | buffer, name
  Access,      // an access phase over mappings: mappings, traffic overrides
  CloseFd,     // close(fd): fd
  Close,       // GEM_CLOSE: buffer (the last handle revokes an export)
  Unmap,       // GEM_VA UNMAP: mapping
  CpuMap,      // mmap of a buffer: buffer (an NPA buffer cannot be CPU-mapped)
  Wait,        // do nothing for a while: for
  Exit,        // the process exits: everything it holds is closed
  Barrier,     // wait until every process with a barrier of this name has reached it: name
  ResetNode,   // reset GPU `gpu` now, down for down_for (a pod-level step)
  Fault,       // a fault in GPU `gpu`'s firmware: fault, [status, count | for] (pod-level)
  Signal,      // a signal to process to_process of GPU `gpu` (pod-level)
  PpodCommit,  // the pPod commit: ppod_size
  VpodCommit,  // the vPod commit: members, [vpod_id, vpod_size]
  Activate,    // UALink on: READY
  Deactivate,  // UALink off, peers not told: CONFIGURED
  Collective,  // workload.collective over the windows mapped (made by workload.kind collective)
  Model,       // a GPU's part of a model trace (made by workload.kind model)
};

inline constexpr std::array<EnumName<StepOp>, 23> kStepOpNames{{
    {"alloc", StepOp::Alloc, "allocate a buffer (gem_create)"},
    {"export", StepOp::Export, "export a buffer: a 128-bit UALink handle"},
    {"send_handle", StepOp::SendHandle, "pass a handle to another GPU out of band"},
    {"send_fd", StepOp::SendFd,
     "give another process of the GPU a dma-buf fd of a buffer (PRIME export, Unix socket)"},
    {"import", StepOp::Import, "import a handle: a dma-buf fd"},
    {"map", StepOp::Map, "map an imported fd or a local buffer into the process's GPU VA space"},
    {"access", StepOp::Access, "run loads and stores over mappings"},
    {"close_fd", StepOp::CloseFd, "close a dma-buf fd"},
    {"close", StepOp::Close, "close a GEM handle (the last one revokes its export)"},
    {"unmap", StepOp::Unmap, "unmap a mapping"},
    {"cpu_map", StepOp::CpuMap, "CPU-map a buffer"},
    {"wait", StepOp::Wait, "wait"},
    {"exit", StepOp::Exit, "the process exits"},
    {"barrier", StepOp::Barrier, "wait for every process that has a barrier of this name"},
    {"reset_node", StepOp::ResetNode, "reset a GPU (pod-level)"},
    {"fault", StepOp::Fault, "make a GPU's firmware or driver misbehave (pod-level)"},
    {"signal", StepOp::Signal, "signal a GPU process: its import waiting for an answer ends"},
    {"ppod_commit", StepOp::PpodCommit, "commit the GPU's pPod (its driver CONFIGURED or not)"},
    {"vpod_commit", StepOp::VpodCommit,
     "commit the GPU's vPod: the accelerators it may share with"},
    {"activate", StepOp::Activate, "activate UALink on the GPU (READY)"},
    {"deactivate", StepOp::Deactivate, "deactivate UALink on the GPU, peers not told (CONFIGURED)"},
    {"collective", StepOp::Collective,
     "run workload.collective (made by workload.kind collective; not available in a scenario "
     "yet)"},
    {"model", StepOp::Model,
     "run a GPU's part of workload.model (made by workload.kind model; not available in a "
     "scenario)"},
}};

// Steps of the pod rather than of a GPU process: `gpu` names the GPU they act on, `process`
// means nothing, and they run in order per GPU (sim/pod/scenario.cpp).
constexpr bool pod_level(StepOp op) {
  return op == StepOp::ResetNode || op == StepOp::Fault || op == StepOp::Signal;
}

// What a fault step does to GPU `gpu`'s firmware.
enum class FaultKind : std::uint8_t {
  FirmwareError,
  FirmwareStall,
  FirmwareDrop,
  PinFailure,
  MapFailure,
  RingCorrupt,
  MessageDelay,
  ImportAllocFailure,
  ExportAllocFailure,
  LinkStall
};
inline constexpr std::array<EnumName<FaultKind>, 10> kFaultKindNames{{
    {"firmware_error", FaultKind::FirmwareError,
     "the next `count` commands it takes are answered with error `status`, not carried out "
     "(the sender gets ECOMM)"},
    {"firmware_stall", FaultKind::FirmwareStall,
     "it takes no command for `for` (senders polling past gpu.driver.writeback_timeout get "
     "ETIME), nor finishes loading (an activation meanwhile polls for READY)"},
    {"firmware_drop", FaultKind::FirmwareDrop,
     "the next `count` commands it takes are lost: not carried out, never reported consumed "
     "(their senders get ETIME)"},
    {"pin_failure", FaultKind::PinFailure,
     "as an exporter, its next `count` pins of a buffer for an importer fail: the NPA_REQ is "
     "answered NPA_FAIL ERROR (the import gets EINVAL)"},
    {"map_failure", FaultKind::MapFailure,
     "as an exporter, its next `count` mappings of a new NPA range fail: NPA_FAIL ERROR, the "
     "range and pin undone"},
    {"ring_corrupt", FaultKind::RingCorrupt,
     "the next `count` commands written into its rings land corrupted: its firmware reads a "
     "bad command and answers status 2 (the sender gets ECOMM)"},
    {"message_delay", FaultKind::MessageDelay,
     "its next command, as a sender, leaves `for` late (the sender polls meanwhile)"},
    {"import_alloc_failure", FaultKind::ImportAllocFailure,
     "as an importer, its next `count` imports fail to allocate their NPA-domain buffer once "
     "the exporter granted the range: ENOMEM, the import freed with no NPA_RELEASE"},
    {"export_alloc_failure", FaultKind::ExportAllocFailure,
     "its next `count` new exports fail to allocate their node and dma-buf: ENOMEM, nothing "
     "exported"},
    {"link_stall", FaultKind::LinkStall,
     "its links (one per plane) carry nothing, either way, for `for`: packets wait in their "
     "senders' queues and credit returns wait too (nothing is lost); past sim.stall_limit "
     "the run stops as stuck"},
}};

// Where an alloc step's buffer lives.
enum class AllocDomain : std::uint8_t { Vram, Gtt };
inline constexpr std::array<EnumName<AllocDomain>, 2> kAllocDomainNames{{
    {"vram", AllocDomain::Vram, "the GPU's VRAM (exportable)"},
    {"gtt", AllocDomain::Gtt, "system memory (not exportable)"},
}};

// A step as the config file has it: every key any op takes, present or not. The reader, the
// writer and the reference docs walk it; check() says which keys each op takes and needs. The
// scenario engine runs its typed form (sim/pod/steps.hpp, made once the config is checked).
struct StepConfig {
  std::optional<StepOp> op;
  std::optional<Time> at;
  std::uint32_t gpu = 0;
  std::uint32_t process = 1;
  std::optional<std::string> name, buffer, handle, fd, mapping, as;
  std::optional<AllocDomain> domain;
  std::optional<FaultKind> fault;
  std::optional<std::uint32_t> status, count;
  std::optional<std::vector<std::string>> mappings;
  std::optional<std::uint32_t> to, to_process;
  std::optional<std::uint32_t> ppod_size, vpod_id, vpod_size;
  std::optional<std::vector<std::uint32_t>> members;
  std::optional<Bytes> size;
  std::optional<Time> for_, down_for;
  // access-phase overrides of workload.traffic
  std::optional<std::uint64_t> accesses;
  std::optional<Time> duration;
  std::optional<std::uint32_t> outstanding;
  std::optional<double> read_fraction;
  std::optional<Bytes> access_size;
  driver::Errno expect = driver::Errno::Ok;
  std::uint32_t retries = 0;
  Time retry_interval = Time::us(10);

  template <class V>
  void visit(V& v) {
    v.choice("op", op, "what the step does", std::span<const EnumName<StepOp>>(kStepOpNames));
    v.field("at", at, "start no earlier than this simulated time");
    v.field("gpu", gpu, "the GPU whose process runs the step (reset_node: the GPU reset)",
            between<std::uint32_t>(0, 1023));
    v.field("process", process, "the process on that GPU (also its VMID)",
            between<std::uint32_t>(1, 15));
    v.field("name", name, "name for what the step creates (buffer, handle, fd, mapping)");
    v.field("buffer", buffer, "a buffer this process created or mapped from an fd");
    v.field("handle", handle, "a UALink handle this GPU exported or was sent");
    v.field("fd", fd, "a dma-buf fd this process imported or was sent");
    v.field("mapping", mapping, "a mapping this process made");
    v.field("mappings", mappings, "the mappings an access phase loads from and stores to");
    v.field("as", as,
            "name of the handle at the receiving GPU (send_handle) or of the fd in the receiving "
            "process (send_fd); default: the handle's or the buffer's name");
    v.choice("domain", domain, "alloc: where the buffer lives (default vram)",
             std::span<const EnumName<AllocDomain>>(kAllocDomainNames));
    v.field("to", to, "send_handle: the receiving GPU", between<std::uint32_t>(0, 1023));
    v.field("to_process", to_process,
            "send_fd: the receiving process on the same GPU; signal: the process signalled",
            between<std::uint32_t>(1, 15));
    v.field("size", size, "alloc: bytes", at_least(Bytes(1)));
    v.field("ppod_size", ppod_size,
            "ppod_commit: the pPod's size as the PSP reports it (1-256, or up to "
            "gpu.driver.accel_max, commits CONFIGURED; another value UNCONFIGURED)");
    v.field("members", members, "vpod_commit: the vPod's accelerators (GPU IDs)");
    v.field("vpod_id", vpod_id, "vpod_commit: the vPod's ID (default 0; EINVAL from 256)");
    v.field("vpod_size", vpod_size,
            "vpod_commit: the vPod's size as committed (default: the members' count; EINVAL "
            "when it differs)",
            between<std::uint32_t>(1, 1024));
    v.choice("fault", fault, "fault: what goes wrong",
             std::span<const EnumName<FaultKind>>(kFaultKindNames));
    v.field("status", status,
            "fault firmware_error: the status the firmware answers (1 FIFO overflow, 2 bad "
            "command, 3 timeout, 4 bad metadata, 5 ring overflow, 6 bad write pointer, 7 "
            "interrupt delivery failure, 8 bad ring address, 9 bad write-back address)",
            between<std::uint32_t>(1, 9));
    v.field("count", count,
            "fault firmware_error, firmware_drop, pin_failure, map_failure, ring_corrupt, "
            "import_alloc_failure, export_alloc_failure: how many commands, pins, mappings, "
            "imports or exports (default 1)",
            between<std::uint32_t>(1, 1'000'000));
    v.field("for", for_,
            "wait: how long; fault firmware_stall: how long the firmware stalls; fault "
            "message_delay: how late the next command leaves; fault link_stall: how long the GPU's "
            "links carry nothing");
    v.field("down_for", down_for, "reset_node: how long the GPU stays down");
    v.field("accesses", accesses, "access: count (default workload.traffic.accesses)");
    v.field("duration", duration, "access: issue for this long instead of a count");
    v.field("outstanding", outstanding, "access: accesses in flight",
            between<std::uint32_t>(1, 65536));
    v.field("read_fraction", read_fraction, "access: fraction of loads", between(0.0, 1.0));
    v.field("access_size", access_size, "access: bytes per access (64..256, multiple of 64)",
            between(Bytes(64), Bytes(256)));
    v.choice("expect", expect, "the errno the step must return; anything else fails the run",
             std::span<const EnumName<driver::Errno>>(driver::kErrnoNames));
    v.field("retries", retries, "times to retry on EAGAIN or EBUSY before giving that result",
            between<std::uint32_t>(0, 1'000'000));
    v.field("retry_interval", retry_interval, "wait between retries");
  }

  template <class C>
  void check(C& c) const {
    if (!op) c.fail("op", "every step needs an op");
    std::set<std::string> allowed{"op",     "at",      "gpu",           "process",
                                  "expect", "retries", "retry_interval"};
    std::set<std::string> required;
    auto want = [&](std::initializer_list<const char*> req,
                    std::initializer_list<const char*> opt) {
      for (const char* k : req)
        required.insert(k), allowed.insert(k);
      for (const char* k : opt)
        allowed.insert(k);
    };
    switch (*op) {
      case StepOp::Alloc: want({"size", "name"}, {"domain"}); break;
      case StepOp::Export: want({"buffer", "name"}, {}); break;
      case StepOp::SendHandle: want({"handle", "to"}, {"as"}); break;
      case StepOp::SendFd: want({"buffer", "to_process"}, {"as"}); break;
      case StepOp::Import: want({"handle", "name"}, {}); break;
      case StepOp::Map: want({"name"}, {"fd", "buffer"}); break;
      case StepOp::Access:
        want({"mappings"}, {"accesses", "duration", "outstanding", "read_fraction", "access_size"});
        break;
      case StepOp::CloseFd: want({"fd"}, {}); break;
      case StepOp::Close: want({"buffer"}, {}); break;
      case StepOp::Unmap: want({"mapping"}, {}); break;
      case StepOp::CpuMap: want({"buffer"}, {}); break;
      case StepOp::Wait: want({"for"}, {}); break;
      case StepOp::Exit: want({}, {}); break;
      case StepOp::Barrier: want({"name"}, {}); break;
      case StepOp::ResetNode: want({"down_for"}, {}); break;
      case StepOp::Signal: want({"to_process"}, {}); break;
      case StepOp::PpodCommit: want({"ppod_size"}, {}); break;
      case StepOp::VpodCommit: want({"members"}, {"vpod_id", "vpod_size"}); break;
      case StepOp::Activate: want({}, {}); break;
      case StepOp::Deactivate: want({}, {}); break;
      case StepOp::Collective:
        c.fail("op",
               "a \"collective\" step is made by workload.kind collective; a scenario "
               "cannot run one yet");
        return;
      case StepOp::Model:
        c.fail("op", "a \"model\" step is made by workload.kind model; a scenario cannot run one");
        return;
      case StepOp::Fault:
        if (fault == FaultKind::FirmwareStall || fault == FaultKind::MessageDelay ||
            fault == FaultKind::LinkStall)
          want({"fault", "for"}, {});
        else if (fault == FaultKind::FirmwareError)
          want({"fault", "status"}, {"count"});
        else
          want({"fault"}, {"count"});
        break;
    }
    const std::pair<const char*, bool> present[] = {
        {"name", name.has_value()},
        {"buffer", buffer.has_value()},
        {"handle", handle.has_value()},
        {"fd", fd.has_value()},
        {"mapping", mapping.has_value()},
        {"mappings", mappings.has_value()},
        {"as", as.has_value()},
        {"domain", domain.has_value()},
        {"to", to.has_value()},
        {"to_process", to_process.has_value()},
        {"ppod_size", ppod_size.has_value()},
        {"members", members.has_value()},
        {"vpod_id", vpod_id.has_value()},
        {"vpod_size", vpod_size.has_value()},
        {"fault", fault.has_value()},
        {"status", status.has_value()},
        {"count", count.has_value()},
        {"size", size.has_value()},
        {"for", for_.has_value()},
        {"down_for", down_for.has_value()},
        {"accesses", accesses.has_value()},
        {"duration", duration.has_value()},
        {"outstanding", outstanding.has_value()},
        {"read_fraction", read_fraction.has_value()},
        {"access_size", access_size.has_value()},
    };
    const std::string op_name(enum_name(std::span<const EnumName<StepOp>>(kStepOpNames), *op));
    for (const auto& [key, has] : present) {
      if (has && !allowed.count(key))
        c.fail(key, "a \"" + op_name + "\" step takes no \"" + key + "\"");
      if (!has && required.count(key))
        c.fail("op", "a \"" + op_name + "\" step needs \"" + key + "\"");
    }
    // A pod-level step is no process's call: a process, an expected errno or retries would
    // mean nothing (given at their defaults they are let be).
    if (pod_level(*op)) {
      if (process != 1)
        c.fail("process", "a \"" + op_name + "\" step is the pod's: it takes no process");
      if (expect != driver::Errno::Ok)
        c.fail("expect", "a \"" + op_name + "\" step is the pod's: it returns no errno to expect");
      if (retries != 0 || retry_interval != Time::us(10))
        c.fail(retries != 0 ? "retries" : "retry_interval",
               "a \"" + op_name + "\" step is the pod's: it is never retried");
    }
    if (*op == StepOp::Map && fd.has_value() == buffer.has_value())
      c.fail("op", "a \"map\" step needs either \"fd\" or \"buffer\"");
    if (access_size && access_size->count() % 64 != 0)
      c.fail("access_size", "must be a multiple of 64 bytes");
  }
};

enum class WorkloadKind : std::uint8_t { AllToAll, Scenario, Collective, Model };
inline constexpr std::array<EnumName<WorkloadKind>, 4> kWorkloadKindNames{{
    {"all_to_all", WorkloadKind::AllToAll,
     "every GPU exports a buffer, imports every other GPU's, maps them, and the initiators "
     "load and store across them"},
    {"scenario", WorkloadKind::Scenario, "the timed steps of workload.steps"},
    {"collective", WorkloadKind::Collective,
     "a collective (workload.collective) over loads and stores: every participant exports a "
     "window of its VRAM, imports and maps the windows its algorithm reaches into, and runs "
     "the collective at each size; results in collectives.csv"},
    {"model", WorkloadKind::Model,
     "a model trace (workload.model): per GPU, compute, collectives over groups and sends and "
     "receives, each once what it depends on has finished; the groups' windows exported, "
     "imported and mapped first; results in model.csv"},
}};

// workload.kind = collective: which collective, how, at which sizes (docs/collectives.md).
struct CollectiveConfig {
  coll::Op op = coll::Op::AllReduce;
  std::optional<coll::Algorithm> algorithm;  // absent: ring, or one_shot where ring is not one
  std::optional<std::vector<Bytes>> sizes;   // absent: 1 MiB (all_to_all_v: send_bytes)
  std::vector<std::uint32_t> gpus;           // empty: every GPU
  std::optional<std::uint32_t> root;         // absent: the first participant
  std::vector<Bytes> send_bytes;             // all_to_all_v, row by sender
  Bytes chunk_size = Bytes::KiB(64);
  std::uint32_t iterations = 5;
  std::uint32_t warmup_iterations = 1;
  std::uint32_t outstanding = 512;
  Bytes access_size = Bytes(256);
  Time poll_interval;

  template <class V>
  void visit(V& v) {
    v.choice("op", op, "the collective", std::span<const EnumName<coll::Op>>(coll::kOpNames));
    v.choice("algorithm", algorithm,
             "how it runs over loads and stores (default ring; one_shot for all_to_all and "
             "all_to_all_v)",
             std::span<const EnumName<coll::Algorithm>>(coll::kAlgorithmNames));
    v.field("sizes", sizes,
            "the sizes to run it at, one after the other, each once (as nccl-tests counts them: "
            "workload.collective.op says what a size is for each op); multiples of 64 B "
            "(default [\"1MiB\"]; all_to_all_v takes send_bytes instead)",
            between(Bytes(64), Bytes::GiB(16)));
    v.field("gpus", gpus,
            "the participants, in ring order (an empty list means every GPU of the pod)",
            between<std::uint32_t>(0, 1023));
    v.field("root", root,
            "broadcast: the GPU whose input every participant receives (default: the first "
            "participant)",
            between<std::uint32_t>(0, 1023));
    v.field("send_bytes", send_bytes,
            "all_to_all_v: what each participant sends each one (itself included), participants "
            "x participants sizes, row by sender in the order of gpus; multiples of 64 B (the "
            "run has one size, reported as the most a participant sends)",
            between(Bytes(0), Bytes::GiB(16)));
    v.field("chunk_size", chunk_size,
            "ring: the pipelining unit; a participant raises a flag at the next one after each "
            "piece this big of the share it passes on (a multiple of 64 B)",
            between(Bytes(64), Bytes::GiB(16)));
    v.field("iterations", iterations, "timed calls at each size (their mean is reported)",
            between<std::uint32_t>(1, 1'000'000));
    v.field("warmup_iterations", warmup_iterations,
            "calls at each size before the timed ones (not reported)",
            between<std::uint32_t>(0, 1'000'000));
    v.field("outstanding", outstanding,
            "loads and stores a participant keeps in flight (its shaders' memory parallelism: "
            "512 x 256 B covers a 100 GB/s port's bandwidth x a ~1 us round trip)",
            between<std::uint32_t>(1, 65536));
    v.field("access_size", access_size, "bytes per load or store (64, 128, 192 or 256)",
            between(Bytes(64), Bytes(256)));
    v.field("poll_interval", poll_interval,
            "a participant waiting for a flag loads it again this long after its last load "
            "came back (0: at once)");
  }
  // What runs when a key is absent.
  coll::Algorithm the_algorithm() const {
    if (algorithm) return *algorithm;
    return op == coll::Op::AllToAll || op == coll::Op::AllToAllV ? coll::Algorithm::OneShot
                                                                 : coll::Algorithm::Ring;
  }
  std::vector<Bytes> the_sizes() const {
    return sizes ? *sizes : std::vector<Bytes>{Bytes::MiB(1)};
  }

  template <class C>
  void check(C& c) const {
    if (const std::string e = coll::invalid(op, the_algorithm()); !e.empty())
      c.fail(algorithm ? "algorithm" : "op",
             algorithm ? e : e + " (give workload.collective.algorithm)");
    if (access_size.count() % 64 != 0) c.fail("access_size", "must be a multiple of 64 bytes");
    if (chunk_size.count() % 64 != 0) c.fail("chunk_size", "must be a multiple of 64 bytes");
    if (sizes && sizes->empty()) c.fail("sizes", "must name at least one size");
    for (std::size_t i = 0; sizes && i < sizes->size(); ++i) {
      if ((*sizes)[i].count() % 64 != 0)
        c.fail("sizes." + std::to_string(i), "must be a multiple of 64 bytes");
      for (std::size_t j = 0; j < i; ++j)
        if ((*sizes)[j] == (*sizes)[i])
          c.fail("sizes." + std::to_string(i),
                 "is listed twice (also sizes." + std::to_string(j) + ")");
      // A ring's pieces, an all_to_all's: each is steps of a program held in memory.
      if ((*sizes)[i].count() / chunk_size.count() > (1u << 16))
        c.fail("chunk_size", "makes " + std::to_string((*sizes)[i].count() / chunk_size.count()) +
                                 " pieces of sizes." + std::to_string(i) +
                                 " (at most 65536: make chunk_size at least " +
                                 to_string(Bytes((((*sizes)[i].count() >> 16) + 63) / 64 * 64)) +
                                 ")");
    }
  }
};

enum class SetupMode : std::uint8_t { Protocol, Direct };
inline constexpr std::array<EnumName<SetupMode>, 2> kSetupModeNames{{
    {"protocol", SetupMode::Protocol,
     "the driver's export, import and mapping calls and every protocol message, simulated"},
    {"direct", SetupMode::Direct,
     "all_to_all, collective and model: the pod starts in the state the protocol would leave "
     "(tables, connections, NPA ranges, pins, page tables, rings), without simulating it"},
}};

// What a step that fails (returns an errno other than its `expect`) does to the run.
enum class OnFailure : std::uint8_t { Stop, Continue };
inline constexpr std::array<EnumName<OnFailure>, 2> kOnFailureNames{{
    {"stop", OnFailure::Stop, "the run stops there (exit 1)"},
    {"continue", OnFailure::Continue,
     "the step is recorded as failed and its process goes on with its next step (a step "
     "needing what a failed one did not make fails too, and an import of a handle that was "
     "never sent fails rather than waiting); the run ends as usual, teardown and checks "
     "included, and exits 1 (for fault campaigns)"},
}};

struct WorkloadConfig {
  WorkloadKind kind = WorkloadKind::AllToAll;
  OnFailure on_failure = OnFailure::Stop;
  SetupMode setup = SetupMode::Protocol;
  Bytes buffer_size = Bytes::MiB(1);
  std::vector<std::uint32_t> initiators;  // empty: every GPU
  std::vector<std::uint32_t> targets;     // empty: every peer
  std::uint32_t peers = 0;                // 0: every GPU of the vPod
  TrafficConfig traffic;
  std::vector<StepConfig> steps;
  CollectiveConfig collective;
  std::string model;
  std::string model_groups;
  bool teardown = true;

  template <class V>
  void visit(V& v) {
    v.choice("kind", kind, "what the GPUs do",
             std::span<const EnumName<WorkloadKind>>(kWorkloadKindNames));
    v.choice("setup", setup,
             "all_to_all, collective and model: how the buffers get exported, imported and mapped "
             "before the accesses (direct: for studies of the access phase on big pods)",
             std::span<const EnumName<SetupMode>>(kSetupModeNames));
    v.field("buffer_size", buffer_size, "all_to_all: size of the buffer each GPU exports",
            between(Bytes(4096), Bytes::GiB(64)));
    v.field("initiators", initiators,
            "all_to_all: GPUs that run the access phase (an empty list means every GPU)",
            between<std::uint32_t>(0, 1023));
    v.field("targets", targets,
            "all_to_all: the GPUs whose buffers the initiators load from and store to (an "
            "empty list means every peer; a hotspot is one GPU)",
            between<std::uint32_t>(0, 1023));
    v.field("peers", peers,
            "all_to_all: how many peers each GPU imports from, spread across the vPod (0: all)",
            between<std::uint32_t>(0, 1023));
    v.section("traffic", traffic, "access phases (a scenario's access steps may override)");
    v.list("steps", steps, "scenario: the steps, in order per GPU process");
    v.section("collective", collective,
              "collective: the collective and its sizes (model: how its collectives run: "
              "chunk_size, outstanding, access_size, poll_interval)");
    v.field("model", model,
            "model: the model trace to run: a JSON file, or the prefix of a Chakra trace's "
            "PREFIX.0.et, PREFIX.1.et, ... (docs/model-traces.md; a path relative to the config "
            "file)");
    v.field("model_groups", model_groups,
            "model, Chakra traces: the communicator groups the nodes' pg_name attributes name, "
            "ASTRA-sim's JSON form {\"1\": [0, 1, 2, 3], ...} (a path relative to the config "
            "file; empty: every collective is over every rank)");
    v.choice("on_failure", on_failure, "scenario: what a failed step does to the run",
             std::span<const EnumName<OnFailure>>(kOnFailureNames));
    v.field("teardown", teardown,
            "at the end every process exits, revokes complete, and the run checks that every "
            "pin, NPA range, buffer, handle and table entry was given back");
  }
  // A warm-up that leaves nothing to measure, where the phase's length is known from the
  // config (the generated all_to_all without a trace; a scenario's steps and a trace set their
  // own, and a run that measures nothing says so: run.json "warnings").
  template <class C>
  void check(C& c) const {
    if (kind == WorkloadKind::Model && model.empty())
      c.fail("model", "workload.kind model needs a model trace");
    if (kind != WorkloadKind::Model && !model.empty())
      c.fail("model", "is read only when workload.kind is \"model\"");
    if (kind != WorkloadKind::Model && !model_groups.empty())
      c.fail("model_groups", "is read only when workload.kind is \"model\"");
    if (kind != WorkloadKind::AllToAll || !traffic.trace.empty()) return;
    if (traffic.duration.as_ps() > 0 && traffic.warmup >= traffic.duration)
      c.fail("traffic.warmup", "must be shorter than traffic.duration (nothing would be measured)");
    if (traffic.duration.as_ps() == 0 && traffic.accesses > 0 &&
        traffic.warmup_accesses >= traffic.accesses)
      c.fail("traffic.warmup_accesses",
             "must be below traffic.accesses (nothing would be measured)");
  }
};

}  // namespace podsim
