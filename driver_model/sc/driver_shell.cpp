#include "driver_model/sc/driver_shell.hpp"

#include <stdexcept>

namespace podsim::driver {

DriverShell::DriverShell(sc_core::sc_module_name name, const DriverConfig& cfg, AccelId self,
                         NpaAddrMode mode, Rng rng, GpuVm& gpuvm, NpaMmu& npa_mmu, Vram& vram,
                         FirmwareMailbox& mailbox)
    : sc_module(name),
      gpuvm_(gpuvm),
      npa_mmu_(npa_mmu),
      vram_(vram),
      mailbox_(mailbox),
      driver_(cfg, self, mode, rng, *this) {
  mailbox_.set_interrupt_handler([this](AccelId from, const FwCommand& cmd) {
    if (cmd.kind != FwCommandKind::Int) return;
    Dwords dw = cmd.dw;
    work_.push(sim_now(), Work{[this, from, dw] { driver_.on_message(from, dw); }, true});
  });
  spawn_method("work", work_.event(), [this] {
    work_.drain([this](Work& w) {
      if (!w.is_op) {
        w.fn();
        return;
      }
      // The driver runs one operation at a time: come back when it is free.
      if (busy_until_ > sim_now()) {
        work_.push(busy_until_, std::move(w));
        return;
      }
      begin_op();
      w.fn();
      end_op();
    });
  });
}

void DriverShell::begin_op() {
  if (in_op_) throw std::logic_error("driver operation started inside another");
  in_op_ = true;
  op_start_ = std::max(sim_now(), busy_until_);
  spent_ = Time{};
}

void DriverShell::end_op() {
  in_op_ = false;
  busy_until_ = op_start_ + spent_;
}

void DriverShell::wait_until_op_end() {
  Time left = busy_until_ - sim_now();
  if (left > Time{}) sc_core::wait(to_sc(left));
}

void DriverShell::at_driver_time(std::function<void()> effect) {
  Time t = now();
  if (t <= sim_now()) {
    effect();
    return;
  }
  work_.push(t, Work{std::move(effect), false});
}

std::optional<std::vector<std::uint64_t>> DriverShell::vram_alloc(std::uint64_t pages) {
  return vram_.allocator().allocate(pages);
}
void DriverShell::vram_free(std::span<const std::uint64_t> pages) {
  std::vector<std::uint64_t> copy(pages.begin(), pages.end());
  at_driver_time([this, copy] { vram_.allocator().free(copy); });
}
void DriverShell::npa_map(std::uint64_t key, std::uint64_t vram_page) {
  at_driver_time([this, key, vram_page] { npa_mmu_.map_page(key, vram_page); });
}
void DriverShell::npa_unmap(std::uint64_t key) {
  at_driver_time([this, key] { npa_mmu_.unmap_page(key); });
}
void DriverShell::npa_flush_tlb() {
  at_driver_time([this] { npa_mmu_.flush_tlb(); });
}
void DriverShell::gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte) {
  at_driver_time([this, vmid, va_page, pte] { gpuvm_.map_page(vmid, va_page, pte); });
}
void DriverShell::gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page) {
  at_driver_time([this, vmid, va_page] { gpuvm_.unmap_page(vmid, va_page); });
}
void DriverShell::gpuvm_flush_tlb(std::uint16_t vmid) {
  at_driver_time([this, vmid] { gpuvm_.invalidate_tlb(vmid); });
}

bool DriverShell::send(AccelId dst, const Dwords& message) {
  FwCommand cmd;
  cmd.kind = FwCommandKind::Int;
  cmd.dw = message;
  Time delay = now() - sim_now();
  return mailbox_.send(dst, cmd, delay < Time{} ? Time{} : delay);
}

void DriverShell::start_timer(std::uint64_t token, Time delay) {
  work_.push(now() + delay, Work{[this, token] { driver_.on_timer(token); }, true});
}

void DriverShell::import_async(const UalinkHandle& h, std::function<void(Result<Fd>)> done) {
  begin_op();
  driver_.import_handle(h, [this, done = std::move(done)](Result<Fd> r) {
    // Completion is seen at the driver's time when it happened.
    Time t = now();
    if (t <= sim_now())
      done(r);
    else
      work_.push(t, Work{[done, r] { done(r); }, false});
  });
  end_op();
}

Result<Fd> DriverShell::import_blocking(const UalinkHandle& h) {
  Result<Fd> result{Errno::Fault, -1};
  bool finished = false;
  sc_core::sc_event ev;
  import_async(h, [&](Result<Fd> r) {
    result = r;
    finished = true;
    ev.notify(sc_core::SC_ZERO_TIME);
  });
  while (!finished)
    sc_core::wait(ev);
  return result;
}

}  // namespace podsim::driver
