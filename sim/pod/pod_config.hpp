// The whole pod's configuration: the top of the config file.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fabric/fabric_config.hpp"
#include "fabric/framing.hpp"
#include "models/compute/compute_config.hpp"
#include "models/npa_mmu/npa_layout.hpp"
#include "sim/core/params.hpp"
#include "sim/node/gpu_config.hpp"
#include "sim/pod/workload_config.hpp"

namespace podsim {

inline constexpr std::array<EnumName<NpaAddrMode>, 2> kAddrModeNames{{
    {"source_aliasing", NpaAddrMode::SourceAliasing, "one NPA range per export, shared"},
    {"source_identification", NpaAddrMode::SourceIdentification, "one NPA range per importer"},
}};

struct PodSection {
  std::uint32_t gpus = 8;
  std::uint32_t gpus_per_host = 1;
  std::uint32_t vpod_size = 0;
  NpaAddrMode addr_mode = NpaAddrMode::SourceAliasing;
  Time host_latency = Time::us(2);

  template <class V>
  void visit(V& v) {
    v.field("gpus", gpus, "accelerators in the pod", between<std::uint32_t>(2, 1024));
    v.field("gpus_per_host", gpus_per_host,
            "GPUs per host: GPUs [k*n, (k+1)*n) are host k's (the last host may have fewer); a "
            "host's GPUs in one vPod are local accelerators, checked against each other at the "
            "vPod commit and activated and deactivated together; no shortcut between them "
            "(docs/driver-model.md)",
            between<std::uint32_t>(1, 8));
    v.field("vpod_size", vpod_size,
            "GPUs per vPod: GPUs [k*size, (k+1)*size) form vPod k and may share memory only "
            "among themselves (0: one vPod of every GPU)",
            between<std::uint32_t>(0, 1024));
    v.choice("addr_mode", addr_mode, "the vPod's NPA address mode",
             std::span<const EnumName<NpaAddrMode>>(kAddrModeNames));
    v.field("host_latency", host_latency,
            "how long what GPU processes tell each other over their hosts' network takes: a "
            "barrier releases, a handle passed with send_handle arrives, a failed step stops "
            "the pod, and the pod learns that the workload (or its teardown) is done, this "
            "long after the event",
            between(Time::ns(1), Time::ms(1)));
  }
};

struct SimSection {
  Time max_time = Time::ms(1000);
  Time sample_interval = Time::us(1);
  Time stall_limit = Time::ms(1);

  template <class V>
  void visit(V& v) {
    v.field("max_time", max_time,
            "simulated-time limit; a workload still running then is reported as unfinished "
            "(at most 20 hours: packets stamp their hops in 56 bits of picoseconds)",
            between(Time::ns(1), Time::ms(72'000'000)));
    v.field("stall_limit", stall_limit,
            "the watchdog: a port or switch output that holds packets and sends none for this "
            "long is stuck, and the run stops there naming every such queue and why it waits "
            "(0s: no watchdog; the run then waits out max_time)",
            between(Time{}, Time::ms(72'000'000)));
    v.field("sample_interval", sample_interval,
            "bin width of the bandwidth-over-time series (timeseries.csv, the report); long runs "
            "double it as often as needed to stay within 65,536 bins",
            at_least(Time::ns(1)));
  }
};

struct PodConfig {
  std::string name = "default";
  std::uint64_t seed = 1;
  PodSection pod;
  GpuConfig gpu;
  FabricConfig fabric;
  WorkloadConfig workload;
  SimSection sim;

  template <class V>
  void visit(V& v) {
    v.field("name", name, "a name for this pod configuration (shown in reports)");
    v.field("seed", seed, "seed of every random generator (--seed overrides it)");
    v.section("pod", pod, "pod-wide settings");
    v.section("gpu", gpu, "every GPU of the pod");
    v.section("fabric", fabric, "the UALoE fabric");
    v.section("workload", workload, "what the GPUs do");
    v.section("sim", sim, "simulation control");
  }

  // Checks across sections; `c.fail(path, message)` reports with the full key path.
  template <class C>
  void check(C& c) const {
    check_topology(*this, c);
    if (pod.gpus > gpu.driver.accel_max)
      c.fail("pod.gpus", std::to_string(pod.gpus) + " GPUs exceed gpu.driver.accel_max (" +
                             std::to_string(gpu.driver.accel_max) + ")");
    for (std::size_t i = 0; i < workload.initiators.size(); ++i)
      if (workload.initiators[i] >= pod.gpus)
        c.fail("workload.initiators." + std::to_string(i),
               "GPU " + std::to_string(workload.initiators[i]) + " does not exist (pod.gpus is " +
                   std::to_string(pod.gpus) + ")");
    for (std::size_t i = 0; i < workload.targets.size(); ++i)
      if (workload.targets[i] >= pod.gpus)
        c.fail("workload.targets." + std::to_string(i),
               "GPU " + std::to_string(workload.targets[i]) + " does not exist (pod.gpus is " +
                   std::to_string(pod.gpus) + ")");
    if (const std::uint32_t vpod = pod.vpod_size ? pod.vpod_size : pod.gpus;
        workload.kind == WorkloadKind::AllToAll && workload.peers > 0 && workload.peers >= vpod)
      c.fail("workload.peers", "each GPU imports from at most the " + std::to_string(vpod - 1) +
                                   " other GPUs of its vPod (pod.vpod_size, or pod.gpus), got " +
                                   std::to_string(workload.peers) + " (0: every one)");
    if (workload.buffer_size < workload.traffic.access_size)
      c.fail("workload.buffer_size", "smaller than workload.traffic.access_size");
    if (workload.kind == WorkloadKind::Collective) check_collective(*this, c);
    // Every packet must fit a receive buffer, or its sender waits for credits that never come:
    // the largest is a store's or a load response's of the largest access the workload makes
    // (a trace's may be 256 B; control messages are 64 B).
    {
      std::uint64_t largest = std::max<std::uint64_t>(64, workload.traffic.access_size.count());
      if (workload.kind == WorkloadKind::Collective)
        largest = std::max<std::uint64_t>(largest, workload.collective.access_size.count());
      if (!workload.traffic.trace.empty()) largest = 256;
      for (const auto& s : workload.steps)
        if (s.access_size) largest = std::max<std::uint64_t>(largest, s.access_size->count());
      const std::uint64_t need = tl_bytes(largest, fabric.port);
      // A GPU port's receive buffer, and a switch's input buffer and output queue: each packet
      // passes all three.
      const std::pair<const char*, Bytes> buffers[] = {
          {"fabric.port.rx_buffer", fabric.port.rx_buffer},
          {"fabric.switch.input_buffer", fabric.switch_.input_buffer},
          {"fabric.switch.output_buffer", fabric.switch_.output_buffer}};
      for (const auto& [key, size] : buffers)
        if (size.count() < need)
          c.fail(key, "must hold the largest packet this workload sends (" +
                          std::to_string(largest) + " B of data, " + std::to_string(need) +
                          " B with its header in whole granules): at least " +
                          std::to_string(need) + "B, got " + std::to_string(size.count()) + "B");
    }
    if (const std::uint64_t first = alias_first_range_page(gpu.driver.accel_max);
        pod.addr_mode == NpaAddrMode::SourceAliasing &&
        gpu.driver.npa_window.count() <= first * kPageSize)
      c.fail("gpu.driver.npa_window",
             "in source_aliasing mode NPA ranges start at " +
                 std::to_string(first * kPageSize >> 20) +
                 " MiB (above the rings' receive pages of gpu.driver.accel_max senders): the "
                 "window must be larger than that");
    if (const std::uint64_t rings = ring_vram_pages(pod.addr_mode, pod.gpus) * 4096;
        gpu.vram.capacity.count() <= rings)
      c.fail("gpu.vram.capacity",
             "must be larger than the " + std::to_string(rings >> 20) +
                 " MiB the rings' receive pages take (one 2 MiB block per 512 pages)");
    if (pod.vpod_size != 0 && pod.gpus % pod.vpod_size != 0)
      c.fail("pod.vpod_size", "must divide pod.gpus (" + std::to_string(pod.gpus) + ")");
    check_scenario(*this, c);
  }
};

// The switches must have the ports the topology needs, and every GPU must be reachable.
template <class C>
void check_topology(const PodConfig& cfg, C& c) {
  const FabricConfig& f = cfg.fabric;
  const std::string ports = std::to_string(f.switch_.ports);
  if (f.topology == Topology::SingleSwitch) {
    if (cfg.pod.gpus > f.switch_.ports)
      c.fail("pod.gpus", std::to_string(cfg.pod.gpus) +
                             " GPUs on one switch need as many ports, but fabric.switch.ports is " +
                             ports);
    return;
  }
  const std::uint32_t per_leaf = f.leaf_spine.gpus_per_leaf;
  const std::uint32_t leaves = (cfg.pod.gpus + per_leaf - 1) / per_leaf;
  if (leaves > 1 && per_leaf + f.leaf_spine.spines > f.switch_.ports)
    c.fail("fabric.leaf_spine.spines",
           std::to_string(per_leaf) + " GPU ports and " + std::to_string(f.leaf_spine.spines) +
               " up-links per leaf exceed fabric.switch.ports (" + ports + ")");
  if (leaves == 1 && per_leaf > f.switch_.ports)
    c.fail("fabric.leaf_spine.gpus_per_leaf", "exceeds fabric.switch.ports (" + ports + ")");
  if (leaves > f.switch_.ports)
    c.fail("fabric.leaf_spine.gpus_per_leaf",
           std::to_string(leaves) + " leaves need " + std::to_string(leaves) +
               "-port spines, but fabric.switch.ports is " + ports);
}

// A collective's participants exist, once each, at least two; its sizes suit its op.
template <class C>
void check_collective(const PodConfig& cfg, C& c) {
  const CollectiveConfig& k = cfg.workload.collective;
  std::vector<bool> seen(cfg.pod.gpus, false);
  for (std::size_t i = 0; i < k.gpus.size(); ++i) {
    const std::string key = "workload.collective.gpus." + std::to_string(i);
    if (k.gpus[i] >= cfg.pod.gpus)
      c.fail(key, "GPU " + std::to_string(k.gpus[i]) + " does not exist (pod.gpus is " +
                      std::to_string(cfg.pod.gpus) + ")");
    else if (seen[k.gpus[i]])
      c.fail(key, "GPU " + std::to_string(k.gpus[i]) + " is listed twice");
    else
      seen[k.gpus[i]] = true;
  }
  const std::size_t n = k.gpus.empty() ? cfg.pod.gpus : k.gpus.size();
  if (n < 2) c.fail("workload.collective.gpus", "a collective needs at least 2 participants");
  if (k.root && (*k.root >= cfg.pod.gpus || (!k.gpus.empty() && !seen[*k.root])))
    c.fail("workload.collective.root", "GPU " + std::to_string(*k.root) + " is not a participant");
  if (k.root && k.op != coll::Op::Broadcast)
    c.fail("workload.collective.root", "is for broadcast only");
  if (cfg.workload.on_failure != OnFailure::Stop)
    c.fail("workload.on_failure",
           "a collective stops at its first failure (its peers would wait for it for ever)");
  if (k.op == coll::Op::AllToAllV) {
    std::vector<std::uint64_t> blocks;
    for (Bytes b : k.send_bytes)
      blocks.push_back(b.count());
    if (const std::string e = coll::invalid_blocks(static_cast<std::uint32_t>(n), blocks);
        !e.empty())
      c.fail("workload.collective.send_bytes", "all_to_all_v " + e);
    if (k.sizes)
      c.fail("workload.collective.sizes",
             "all_to_all_v sends workload.collective.send_bytes: leave sizes out");
    std::uint64_t largest = 0;
    for (Bytes b : k.send_bytes)
      largest = std::max(largest, b.count());
    if (largest / k.chunk_size.count() > (1u << 16))
      c.fail("workload.collective.chunk_size",
             "makes more than 65536 pieces of the largest block of send_bytes");
  } else {
    if (!k.send_bytes.empty()) c.fail("workload.collective.send_bytes", "is for all_to_all_v only");
    const std::vector<Bytes> sizes = k.the_sizes();
    for (std::size_t i = 0; i < sizes.size(); ++i)
      if (const std::string e =
              coll::invalid_size(k.op, static_cast<std::uint32_t>(n), sizes[i].count());
          !e.empty())
        c.fail("workload.collective.sizes." + std::to_string(i), e);
  }
  if (cfg.pod.vpod_size != 0 && cfg.pod.vpod_size != cfg.pod.gpus)
    c.fail("pod.vpod_size", "a collective runs on a pod that is one vPod (pod.vpod_size 0)");
}

// Names a scenario's steps use must be defined by earlier steps (or sent, for handles), and
// GPUs must exist; checked before anything runs.
template <class C>
void check_scenario(const PodConfig& cfg, C& c) {
  const WorkloadConfig& w = cfg.workload;
  if (w.setup == SetupMode::Direct && w.kind == WorkloadKind::Scenario)
    c.fail("workload.setup",
           "\"direct\" sets up the all_to_all, collective and model workloads only; a scenario's "
           "steps run as written");
  if (w.kind != WorkloadKind::Scenario) {
    if (!w.steps.empty())
      c.fail("workload.steps", "steps run only when workload.kind is \"scenario\"");
    return;
  }
  if (w.steps.empty()) c.fail("workload.steps", "a scenario needs at least one step");
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::string>> buffers, fds, maps;
  std::map<std::uint32_t, std::set<std::string>> handles;  // defined or sent, per GPU
  for (const StepConfig& s : w.steps)  // handles may arrive from steps listed later
    if (*s.op == StepOp::Export && s.name) handles[s.gpu].insert(*s.name);
  for (const StepConfig& s : w.steps)
    if (*s.op == StepOp::SendHandle && s.to) handles[*s.to].insert(s.as ? *s.as : *s.handle);
  // Processes that run steps (an fd sent to one that runs none would reach nobody).
  std::set<std::pair<std::uint32_t, std::uint32_t>> running;
  for (const StepConfig& s : w.steps)
    if (!pod_level(*s.op)) running.insert({s.gpu, s.process});
  // fds another process of the GPU sends (send_fd) may arrive from steps listed later too.
  std::map<std::pair<std::uint32_t, std::uint32_t>, std::set<std::string>> sent_fds;
  for (const StepConfig& s : w.steps)
    if (*s.op == StepOp::SendFd && s.to_process && s.buffer)
      sent_fds[{s.gpu, *s.to_process}].insert(s.as ? *s.as : *s.buffer);
  for (std::size_t i = 0; i < w.steps.size(); ++i) {
    const StepConfig& s = w.steps[i];
    const std::string at = "workload.steps." + std::to_string(i);
    if (s.gpu >= cfg.pod.gpus)
      c.fail(at + ".gpu", "GPU " + std::to_string(s.gpu) + " does not exist (pod.gpus is " +
                              std::to_string(cfg.pod.gpus) + ")");
    if (s.to && *s.to >= cfg.pod.gpus)
      c.fail(at + ".to", "GPU " + std::to_string(*s.to) + " does not exist");
    const auto key = std::make_pair(s.gpu, s.process);
    auto need = [&](const std::optional<std::string>& n, std::set<std::string>& defined,
                    const char* field, const char* what) {
      if (n && !defined.count(*n))
        c.fail(at + "." + field,
               "no " + std::string(what) + " named \"" + *n + "\" on gpu " + std::to_string(s.gpu) +
                   (std::string(what) == "handle" ? std::string()
                                                  : " process " + std::to_string(s.process)) +
                   " by this step");
    };
    // The process `to_process` names (send_fd's receiver, signal's target) must run steps.
    auto need_running = [&](const char* what) {
      if (s.to_process && !running.count({s.gpu, *s.to_process}))
        c.fail(at + ".to_process", "process " + std::to_string(*s.to_process) + " of gpu " +
                                       std::to_string(s.gpu) + " runs no steps" + what);
    };
    auto need_fd = [&](const std::optional<std::string>& n) {
      if (n && sent_fds[key].count(*n)) return;  // another process sends it (send_fd)
      need(n, fds[key], "fd", "fd");
    };
    switch (*s.op) {
      case StepOp::Alloc: buffers[key].insert(*s.name); break;
      case StepOp::Export: need(s.buffer, buffers[key], "buffer", "buffer"); break;
      case StepOp::SendHandle: need(s.handle, handles[s.gpu], "handle", "handle"); break;
      case StepOp::SendFd:
        need(s.buffer, buffers[key], "buffer", "buffer");
        need_running(": nothing would receive the fd");
        break;
      case StepOp::Import:
        need(s.handle, handles[s.gpu], "handle", "handle");
        fds[key].insert(*s.name);
        break;
      case StepOp::Map:
        need_fd(s.fd);
        need(s.buffer, buffers[key], "buffer", "buffer");
        maps[key].insert(*s.name);
        if (s.fd) buffers[key].insert(*s.name);
        break;
      case StepOp::Access:
        for (const auto& m : *s.mappings)
          need(m, maps[key], "mappings", "mapping");
        break;
      case StepOp::CloseFd: need_fd(s.fd); break;
      case StepOp::Close: need(s.buffer, buffers[key], "buffer", "buffer"); break;
      case StepOp::Unmap: need(s.mapping, maps[key], "mapping", "mapping"); break;
      case StepOp::CpuMap: need(s.buffer, buffers[key], "buffer", "buffer"); break;
      case StepOp::Exit:
        buffers[key].clear();
        fds[key].clear();
        maps[key].clear();
        break;
      case StepOp::Wait:
      case StepOp::Barrier:
      case StepOp::Signal: need_running(""); break;
      case StepOp::VpodCommit: {
        if (s.members->empty()) c.fail(at + ".members", "a vPod needs at least one member");
        std::set<std::uint32_t> seen;
        for (std::size_t i = 0; i < s.members->size(); ++i) {
          const std::uint32_t m = (*s.members)[i];
          const std::string key = at + ".members." + std::to_string(i);
          if (m >= cfg.pod.gpus)
            c.fail(key, "GPU " + std::to_string(m) + " does not exist (pod.gpus is " +
                            std::to_string(cfg.pod.gpus) + ")");
          if (!seen.insert(m).second) c.fail(key, "GPU " + std::to_string(m) + " is listed twice");
        }
        break;
      }
      case StepOp::ResetNode:
      case StepOp::Fault:
      case StepOp::PpodCommit:
      case StepOp::Activate:
      case StepOp::Deactivate:
      case StepOp::Collective:
      case StepOp::Model: break;
    }
  }
}

}  // namespace podsim
