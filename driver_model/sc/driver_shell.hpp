// DriverShell: gives the plain-C++ Driver time and hardware. It runs one driver operation at
// a time (a user call, a message from the mailbox, a timer), starting when the previous one
// has finished; the operation's effects on the hardware (page-table writes, TLB flushes,
// messages) take place at the driver's time when it made them.
#pragma once

#include <functional>
#include <memory>

#include "driver_model/driver.hpp"
#include "models/gpuvm/gpuvm.hpp"
#include "models/mailbox/firmware_mailbox.hpp"
#include "models/npa_mmu/npa_mmu.hpp"
#include "models/vram/vram.hpp"
#include "sim/kernel/timed_queue.hpp"

namespace podsim::driver {

class DriverShell final : public sc_core::sc_module, public HasStats, private DriverEnv {
 public:
  DriverShell(sc_core::sc_module_name name, const DriverConfig& cfg, AccelId self, NpaAddrMode mode,
              Rng rng, GpuVm& gpuvm, NpaMmu& npa_mmu, Vram& vram, FirmwareMailbox& mailbox);

  // Runs `fn(driver)` as one driver operation, from an SC_THREAD: waits for the driver to be
  // free, then for the operation's duration, and returns its result.
  template <class Fn>
  auto call(Fn&& fn) {
    begin_op();
    auto r = fn(driver_);
    end_op();
    wait_until_op_end();
    return r;
  }
  // IMPORT from an SC_THREAD: returns when the import has completed (maybe much later).
  Result<Fd> import_blocking(const UalinkHandle& h);
  // Starts an import now; `done` runs in simulated time when it completes.
  void import_async(const UalinkHandle& h, std::function<void(Result<Fd>)> done);

  Driver& driver() { return driver_; }
  const StatGroup& stat_group() const override { return driver_.stats(); }

 private:
  // DriverEnv
  Time now() const override { return op_start_ + spent_; }
  void spend(Time t) override { spent_ += t; }
  std::optional<std::vector<std::uint64_t>> vram_alloc(std::uint64_t pages) override;
  void vram_free(std::span<const std::uint64_t> pages) override;
  void npa_map(std::uint64_t key, std::uint64_t vram_page) override;
  void npa_unmap(std::uint64_t key) override;
  void npa_flush_tlb() override;
  void gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte) override;
  void gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page) override;
  void gpuvm_flush_tlb(std::uint16_t vmid) override;
  bool send(AccelId dst, const Dwords& message) override;
  void start_timer(std::uint64_t token, Time delay) override;

  void begin_op();
  void end_op();
  void wait_until_op_end();
  void at_driver_time(std::function<void()> effect);

  GpuVm& gpuvm_;
  NpaMmu& npa_mmu_;
  Vram& vram_;
  FirmwareMailbox& mailbox_;
  Driver driver_;
  Time op_start_, spent_, busy_until_;
  bool in_op_ = false;

  struct Work {
    std::function<void()> fn;
    bool is_op;  // an operation of the driver's (waits for the driver); else a hardware effect
  };
  TimedQueue<Work> work_;
};

}  // namespace podsim::driver
