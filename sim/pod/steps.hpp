// A scenario's steps, typed: one struct per op holding exactly what that op takes, in a
// std::variant. What the scenario engine (sim/pod/scenario.cpp) runs.
//
// The config file's schema stays StepConfig (sim/pod/workload_config.hpp): one struct of
// optional keys, because the strict reader, the config writer and the reference docs all walk
// one flat list of keys (the resolved config must come out byte-identical, keys in the
// schema's order), and StepConfig::check is where a key an op does not take, or a missing
// one, is reported with its key path. Once a step has passed that check, to_step turns it
// into its typed form, once; nothing after that reads the optionals again.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "driver_model/errno.hpp"
#include "sim/core/units.hpp"
#include "sim/pod/workload_config.hpp"

namespace podsim {

// What every step has, whatever its op.
struct StepCommon {
  std::optional<Time> at;  // start no earlier than this
  std::uint32_t gpu = 0;   // reset_node: the GPU reset
  std::uint32_t process = 1;
  driver::Errno expect = driver::Errno::Ok;
  std::uint32_t retries = 0;  // on EAGAIN or EBUSY
  Time retry_interval = Time::us(10);
};

struct AllocStep {
  static constexpr StepOp kOp = StepOp::Alloc;
  Bytes size;
  std::string name;
  AllocDomain domain = AllocDomain::Vram;  // absent from the config: VRAM
};
struct ExportStep {
  static constexpr StepOp kOp = StepOp::Export;
  std::string buffer, name;
};
struct SendHandleStep {
  static constexpr StepOp kOp = StepOp::SendHandle;
  std::string handle;
  std::uint32_t to = 0;
  std::string as;  // its name at `to` (absent from the config: `handle`)
};
struct SendFdStep {
  static constexpr StepOp kOp = StepOp::SendFd;
  std::string buffer;
  std::uint32_t to_process = 1;
  std::string as;  // the fd's name in `to_process` (absent from the config: `buffer`)
};
struct ImportStep {
  static constexpr StepOp kOp = StepOp::Import;
  std::string handle, name;
};
struct MapStep {
  static constexpr StepOp kOp = StepOp::Map;
  enum class From : std::uint8_t { Fd, Buffer };
  From from = From::Buffer;  // an imported fd (PRIME import first) or a buffer of the process
  std::string source;        // the fd's or the buffer's name
  std::string name;
};
struct AccessStep {
  static constexpr StepOp kOp = StepOp::Access;
  std::vector<std::string> mappings;
  // Overrides of workload.traffic (absent: the workload's value).
  std::optional<std::uint64_t> accesses;
  std::optional<Time> duration;
  std::optional<std::uint32_t> outstanding;
  std::optional<double> read_fraction;
  std::optional<Bytes> access_size;
};
struct CloseFdStep {
  static constexpr StepOp kOp = StepOp::CloseFd;
  std::string fd;
};
struct CloseStep {
  static constexpr StepOp kOp = StepOp::Close;
  std::string buffer;
};
struct UnmapStep {
  static constexpr StepOp kOp = StepOp::Unmap;
  std::string mapping;
};
struct CpuMapStep {
  static constexpr StepOp kOp = StepOp::CpuMap;
  std::string buffer;
};
struct WaitStep {
  static constexpr StepOp kOp = StepOp::Wait;
  Time for_;
};
struct ExitStep {
  static constexpr StepOp kOp = StepOp::Exit;
};
struct BarrierStep {
  static constexpr StepOp kOp = StepOp::Barrier;
  std::string name;
};
struct ResetNodeStep {  // a pod-level step: common.gpu is the GPU reset
  static constexpr StepOp kOp = StepOp::ResetNode;
  Time down_for;
};

struct FaultStep {  // a pod-level step: common.gpu is the GPU whose firmware misbehaves
  static constexpr StepOp kOp = StepOp::Fault;
  FaultKind fault = FaultKind::FirmwareError;
  std::uint32_t status = 0, count = 1;  // firmware_error; count also the drop, failures
                                        // and corruptions
  Time for_;                            // firmware_stall, message_delay
};

struct SignalStep {  // a pod-level step: common.gpu is the GPU of the process signalled
  static constexpr StepOp kOp = StepOp::Signal;
  std::uint32_t to_process = 1;
};

struct PpodCommitStep {
  static constexpr StepOp kOp = StepOp::PpodCommit;
  std::uint32_t size = 0;
};
struct VpodCommitStep {
  static constexpr StepOp kOp = StepOp::VpodCommit;
  std::vector<std::uint32_t> members;
  std::uint32_t id = 0, size = 0;  // size 0: the members' count
};
struct ActivateStep {
  static constexpr StepOp kOp = StepOp::Activate;
};
struct DeactivateStep {
  static constexpr StepOp kOp = StepOp::Deactivate;
};

// A collective's participant (made by workload.kind collective, never read from a config;
// where it mapped each participant's window: CollectiveRun::windows).
struct CollectiveStep {
  static constexpr StepOp kOp = StepOp::Collective;
  std::uint32_t rank = 0;
};

// A GPU's part of a model trace (made by workload.kind model, never read from a config).
struct ModelStep {
  static constexpr StepOp kOp = StepOp::Model;
};

using StepKind =
    std::variant<AllocStep, ExportStep, SendHandleStep, SendFdStep, ImportStep, MapStep, AccessStep,
                 CloseFdStep, CloseStep, UnmapStep, CpuMapStep, WaitStep, ExitStep, BarrierStep,
                 ResetNodeStep, FaultStep, SignalStep, PpodCommitStep, VpodCommitStep, ActivateStep,
                 DeactivateStep, CollectiveStep, ModelStep>;
static_assert(std::variant_size_v<StepKind> == kStepOpNames.size(), "one alternative per op");

struct Step {
  StepCommon common;
  StepKind kind;

  StepOp op() const {
    return std::visit([](const auto& k) { return std::decay_t<decltype(k)>::kOp; }, kind);
  }
};

// The step's op as the config names it ("alloc", "send_handle", ...).
std::string_view op_name(StepOp op);

// The typed form of a step that passed StepConfig::check (throws std::invalid_argument naming
// the op and key if a required key is missing: a StepConfig built in code, never checked).
Step to_step(const StepConfig& s);
// A step of GPU `gpu` with the common settings' defaults (a generated workload's).
Step make_step(std::uint32_t gpu, StepKind kind);
std::vector<Step> to_steps(const std::vector<StepConfig>& steps);

}  // namespace podsim
