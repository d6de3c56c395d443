#include "sim/node/driver_shell.hpp"

#include <fmt/format.h>
#include <array>

#include "sim/core/timeline.hpp"

namespace podsim::driver {

DriverShell::DriverShell(sc_core::sc_module_name name, const DriverConfig& cfg, AccelId self,
                         VpodInfo vpod, NpaAddrMode mode, std::uint64_t seed, GpuVm& gpuvm,
                         NpaMmu& npa_mmu, Vram& vram, FirmwareMailbox& mailbox,
                         InvariantLog* invariants, Dispatcher& events)
    : sc_module(name),
      cfg_(cfg),
      self_(self),
      gpuvm_(gpuvm),
      npa_mmu_(npa_mmu),
      vram_(vram),
      mailbox_(mailbox),
      invariants_(invariants),
      poll_rng_(Rng::for_component(seed, std::string(this->name()) + ".poll")),
      timers_(
          events, queue_name(*this, "timers"),
          [this](Callback& c) {
            if (!pending_.erase(c.id)) return;  // cancelled
            c.fn();
          },
          16),
      driver_(cfg, self, std::move(vpod), mode, Rng::for_component(seed, std::string(this->name())),
              *this) {
  stats_.add_child(driver_.stats());
  mailbox_.set_interrupt_handler([this](AccelId from, const FwCommand& cmd) {
    if (cmd.kind == FwCommandKind::Int) driver_.on_interrupt(from, cmd.dw);
  });
  mailbox_.set_writeback_handler(
      [this](AccelId receiver, unsigned ring, std::uint32_t seq, std::uint32_t status) {
        auto it = sends_.find({receiver, ring, seq});
        if (it == sends_.end()) return;  // the sender gave up, or was reset
        it->second.consumed = true;
        it->second.status = status;
      });
}

DriverShell::~DriverShell() = default;

void DriverShell::start(Task<void> t, std::function<void()> done) {
  if (down_) {
    done();
    return;
  }
  const std::uint64_t id = next_call_++;
  auto shared = std::make_shared<std::function<void()>>(std::move(done));
  aborts_[id] = [shared] { (*shared)(); };
  struct Wrap {
    static Task<int> run(Task<void> t) {
      co_await std::move(t);
      co_return 0;
    }
  };
  calls_.run(Wrap::run(std::move(t)), [this, id, shared](int) {
    aborts_.erase(id);
    (*shared)();
  });
}

void DriverShell::call(Task<void> t) {
  bool finished = false;
  sc_core::sc_event ev;
  start(std::move(t), std::function<void()>([&] {
          finished = true;
          notify_event(ev);
        }));
  while (!finished)
    sc_core::wait(ev);
}

void DriverShell::device_reset() {
  calls_.cancel_all();
  auto aborts = std::move(aborts_);
  aborts_.clear();
  sends_.clear();
  driver_.device_reset();
  for (auto& [id, abort] : aborts)
    abort();
}

Scheduler::TimerId DriverShell::call_at(Time at, std::function<void()> fn) {
  const TimerId id = next_timer_++;
  pending_.insert(id);
  timers_.push(at < sim_now() ? sim_now() : at, Callback{id, std::move(fn)}, id);
  return id;
}

void DriverShell::cancel(TimerId id) {
  pending_.erase(id);  // one that ran or was cancelled is no longer pending: nothing to do
}

Task<std::optional<std::vector<std::uint64_t>>> DriverShell::vram_alloc(std::uint64_t pages) {
  // Vram answers at once, or when its clearing engine has zeroed enough freed pages.
  std::optional<Vram::Pages> result;
  WaitQueue answered;
  struct Cancel {  // a frame destroyed while waiting (device reset) withdraws its request
    Vram& vram;
    std::uint64_t id = 0;
    bool pending = true;
    ~Cancel() {
      if (pending) vram.cancel_allocation(id);
    }
  } cancel{vram_};
  cancel.id = vram_.allocate(pages, [&](Vram::Pages p) {
    result = std::move(p);
    cancel.pending = false;
    answered.wake_all();
  });
  while (!result)
    co_await answered.wait(*this);
  co_return std::move(*result);
}
void DriverShell::vram_free(std::span<const std::uint64_t> pages) {
  vram_.free(pages);
}
void DriverShell::vram_pin(std::span<const std::uint64_t> pages) {
  vram_.allocator().pin(pages);
}
void DriverShell::vram_unpin(std::span<const std::uint64_t> pages) {
  vram_.allocator().unpin(pages);
}
void DriverShell::vram_copy_page(std::uint64_t from, std::uint64_t to) {
  std::array<unsigned char, kPageSize> page;
  vram_.read_bytes(from << kPageShift, page.data(), page.size());
  vram_.write_bytes(to << kPageShift, page.data(), page.size());
}
void DriverShell::npa_map(std::uint64_t first_key, std::span<const std::uint64_t> vram_pages,
                          std::uint64_t tag, std::uint8_t max_fragment) {
  npa_mmu_.map(first_key, vram_pages, tag, max_fragment);
}
void DriverShell::npa_set_retry(std::uint64_t key, bool retry) {
  npa_mmu_.set_retry(key, retry);
}
void DriverShell::npa_set_retry(std::uint64_t first_key, std::uint64_t pages, bool retry) {
  npa_mmu_.set_retry(first_key, pages, retry);
}
void DriverShell::npa_unmap(std::uint64_t first_key, std::uint64_t pages) {
  npa_mmu_.unmap(first_key, pages);
}
Time DriverShell::npa_flush_tlb() {
  return npa_mmu_.flush_tlb(FlushKind::Heavyweight);
}
bool DriverShell::npa_any_mapped(std::uint64_t first_key, std::uint64_t pages) const {
  return npa_mmu_.any_mapped(first_key, pages);
}
void DriverShell::gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages,
                            const Pte& proto, std::span<const std::uint64_t> frames) {
  gpuvm_.map(vmid, va_page, pages, proto, frames);
}
void DriverShell::gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages) {
  gpuvm_.unmap(vmid, va_page, pages);
}
Time DriverShell::gpuvm_flush_tlb(std::uint16_t vmid, std::uint64_t first, std::uint64_t pages,
                                  FlushKind kind) {
  return gpuvm_.invalidate(vmid, kind, first, pages);
}

void DriverShell::note_released(std::uint64_t tag, AccelId importer) {
  npa_mmu_.mark_released(tag, importer);
}

void DriverShell::note_granted(std::uint64_t tag, AccelId importer) {
  npa_mmu_.mark_granted(tag, importer);
}

void DriverShell::npa_enable(bool on) {
  npa_mmu_.set_enabled(on);
}
void DriverShell::firmware_load() {
  mailbox_.load();
}
bool DriverShell::firmware_ready() const {
  return mailbox_.ready();
}
void DriverShell::firmware_halt() {
  mailbox_.halt();
}

void DriverShell::note_violation(const std::string& what) {
  if (invariants_) invariants_->report(sim_now(), what);
}

Task<Errno> DriverShell::send(AccelId dst, Ring ring, Dwords command) {
  FwCommand cmd;
  cmd.kind = ring == Ring::Tlb ? FwCommandKind::TlbInv : FwCommandKind::Int;
  cmd.dw = command;
  const auto seq = mailbox_.send(dst, cmd);
  if (!seq) co_return Errno::NoSpc;
  const SendKey key{dst, static_cast<unsigned>(ring), *seq};
  sends_[key] = SendState{};
  const Time t0 = sim_now();
  // Poll the write-back page, sleeping poll_interval_min..max between looks.
  const std::uint64_t span =
      static_cast<std::uint64_t>((cfg_.poll_interval_max - cfg_.poll_interval_min).as_ps());
  while (true) {
    polls_.inc();
    auto it = sends_.find(key);
    if (it == sends_.end()) co_return Errno::NoDev;  // we were reset
    if (it->second.consumed) {
      const std::uint32_t status = it->second.status;
      sends_.erase(it);
      send_time_.record(sim_now() - t0);
      if (timeline_) note_send(dst, ring, command, t0, status == 0 ? "ok" : "firmware error");
      co_return status == 0 ? Errno::Ok : Errno::Comm;
    }
    if (sim_now() - t0 >= cfg_.writeback_timeout) {
      sends_.erase(it);
      send_timeouts_.inc();
      if (timeline_) note_send(dst, ring, command, t0, "timed out");
      co_return Errno::Time;
    }
    const Time interval =
        cfg_.poll_interval_min + Time::ps(static_cast<std::int64_t>(poll_rng_.below(span + 1)));
    co_await Sleep(*this, interval);
  }
}

void DriverShell::note_send(AccelId dst, Ring ring, const Dwords& command, Time t0,
                            const char* outcome) {
  const std::string what = ring == Ring::Tlb
                               ? std::string("TLB_INV")
                               : std::string(msg_name(static_cast<MsgType>(command[0] & 0x3FF)));
  timeline_->message_sent(self_, dst, what, t0, sim_now(),
                          fmt::format(R"({{"to": {}, "outcome": "{}"}})", dst, outcome));
}

void DriverShell::note_call(std::string_view what, Time start, const std::string& detail) {
  if (timeline_)
    timeline_->async_span(self_, Timeline::Driver, std::string(what), start, sim_now(), detail);
}

void DriverShell::note_message(std::string_view what, AccelId from) {
  if (timeline_)
    timeline_->message_handled(self_, from, std::string(what), sim_now(),
                               fmt::format(R"({{"from": {}}})", from));
}

}  // namespace podsim::driver
