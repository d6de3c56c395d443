#include "sim/pod/steps.hpp"

#include <stdexcept>
#include <utility>

namespace podsim {

std::string_view op_name(StepOp op) {
  return enum_name(std::span<const EnumName<StepOp>>(kStepOpNames), op);
}

namespace {

// A key the op requires; StepConfig::check has made sure it is there.
template <class T>
const T& need(const std::optional<T>& v, const StepConfig& s, const char* key) {
  if (!v)
    throw std::invalid_argument("a \"" + std::string(op_name(*s.op)) + "\" step needs \"" + key +
                                "\"");
  return *v;
}

StepKind kind_of(const StepConfig& s) {
  switch (*s.op) {
    case StepOp::Alloc:
      return AllocStep{need(s.size, s, "size"), need(s.name, s, "name"),
                       s.domain.value_or(AllocDomain::Vram)};
    case StepOp::Export: return ExportStep{need(s.buffer, s, "buffer"), need(s.name, s, "name")};
    case StepOp::SendHandle: {
      const std::string& handle = need(s.handle, s, "handle");
      return SendHandleStep{handle, need(s.to, s, "to"), s.as.value_or(handle)};
    }
    case StepOp::SendFd: {
      const std::string& buffer = need(s.buffer, s, "buffer");
      return SendFdStep{buffer, need(s.to_process, s, "to_process"), s.as.value_or(buffer)};
    }
    case StepOp::Import: return ImportStep{need(s.handle, s, "handle"), need(s.name, s, "name")};
    case StepOp::Map:
      if (s.fd) return MapStep{MapStep::From::Fd, *s.fd, need(s.name, s, "name")};
      return MapStep{MapStep::From::Buffer, need(s.buffer, s, "buffer"), need(s.name, s, "name")};
    case StepOp::Access:
      return AccessStep{need(s.mappings, s, "mappings"),
                        s.accesses,
                        s.duration,
                        s.outstanding,
                        s.read_fraction,
                        s.access_size};
    case StepOp::CloseFd: return CloseFdStep{need(s.fd, s, "fd")};
    case StepOp::Close: return CloseStep{need(s.buffer, s, "buffer")};
    case StepOp::Unmap: return UnmapStep{need(s.mapping, s, "mapping")};
    case StepOp::CpuMap: return CpuMapStep{need(s.buffer, s, "buffer")};
    case StepOp::Wait: return WaitStep{need(s.for_, s, "for")};
    case StepOp::Exit: return ExitStep{};
    case StepOp::Barrier: return BarrierStep{need(s.name, s, "name")};
    case StepOp::ResetNode: return ResetNodeStep{need(s.down_for, s, "down_for")};
    case StepOp::Signal: return SignalStep{need(s.to_process, s, "to_process")};
    case StepOp::PpodCommit: return PpodCommitStep{need(s.ppod_size, s, "ppod_size")};
    case StepOp::VpodCommit:
      return VpodCommitStep{need(s.members, s, "members"), s.vpod_id.value_or(0),
                            s.vpod_size.value_or(0)};
    case StepOp::Activate: return ActivateStep{};
    case StepOp::Deactivate: return DeactivateStep{};
    case StepOp::Collective:
    case StepOp::Model: break;  // never in a config (StepConfig::check refuses them)
    case StepOp::Fault: {
      const FaultKind f = need(s.fault, s, "fault");
      if (f == FaultKind::FirmwareStall || f == FaultKind::MessageDelay ||
          f == FaultKind::LinkStall)
        return FaultStep{f, 0, 1, need(s.for_, s, "for")};
      if (f == FaultKind::FirmwareError)
        return FaultStep{f, need(s.status, s, "status"), s.count.value_or(1), Time{}};
      return FaultStep{f, 0, s.count.value_or(1), Time{}};
    }
  }
  throw std::invalid_argument("a step with an unknown op");
}

}  // namespace

Step make_step(std::uint32_t gpu, StepKind kind) {
  Step s{StepCommon{}, std::move(kind)};
  s.common.gpu = gpu;
  return s;
}

Step to_step(const StepConfig& s) {
  if (!s.op) throw std::invalid_argument("every step needs an op");
  return Step{StepCommon{s.at, s.gpu, s.process, s.expect, s.retries, s.retry_interval},
              kind_of(s)};
}

std::vector<Step> to_steps(const std::vector<StepConfig>& steps) {
  std::vector<Step> out;
  out.reserve(steps.size());
  for (const StepConfig& s : steps)
    out.push_back(to_step(s));
  return out;
}

}  // namespace podsim
