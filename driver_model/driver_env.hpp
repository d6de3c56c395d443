// What the driver model sees of the world: time (it is a Scheduler), its own GPU's hardware
// (VRAM allocator, NPA VM, GPUVM), its firmware mailbox, and the invariant checker. The
// SystemC shell implements it against the models; unit tests with plain fakes. Hardware
// programming takes effect at once; what it costs, the driver spends (co_await sleep).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "driver_model/coro.hpp"
#include "driver_model/errno.hpp"
#include "driver_model/messages.hpp"
#include "models/mmu/pte.hpp"

namespace podsim::driver {

// The two rings each sender has at each receiver.
enum class Ring : std::uint8_t { Interrupt = 0, Tlb = 1 };

class DriverEnv : public Scheduler {
 public:
  // VRAM pages (4 KiB page numbers), or nothing when VRAM is full. Waits while the pages it
  // needs are still being cleared.
  virtual Task<std::optional<std::vector<std::uint64_t>>> vram_alloc(std::uint64_t pages) = 0;
  virtual void vram_free(std::span<const std::uint64_t> pages) = 0;
  // Copies one page's contents to another (a page migration's copy; its time is the caller's).
  virtual void vram_copy_page(std::uint64_t from, std::uint64_t to) = 0;
  virtual void vram_pin(std::span<const std::uint64_t> pages) = 0;
  virtual void vram_unpin(std::span<const std::uint64_t> pages) = 0;

  // This GPU's NPA VM: keys [first_key, first_key + vram_pages.size()) mapped to those VRAM
  // pages, with the largest fragments that hold (best_fragment, as amdgpu_vm_update_range
  // chooses them), replacing what was there. A key is what NpaMmu::key_of gives; `tag` names
  // the export (handle lo) so the invariant checker can tell whose range an access used.
  // Fragments no larger than 2^max_fragment pages (the driver's vm_fragment_size).
  virtual void npa_map(std::uint64_t first_key, std::span<const std::uint64_t> vram_pages,
                       std::uint64_t tag, std::uint8_t max_fragment) = 0;
  // PTE.X = 1: accesses get a retry response instead of memory (revoke, page migration).
  virtual void npa_set_retry(std::uint64_t key, bool retry) = 0;
  // The same for [first_key, first_key + pages).
  virtual void npa_set_retry(std::uint64_t first_key, std::uint64_t pages, bool retry) = 0;
  // Unmaps [first_key, first_key + pages).
  virtual void npa_unmap(std::uint64_t first_key, std::uint64_t pages) = 0;
  // A heavyweight flush of the NPA VM's translations; what it costs.
  virtual Time npa_flush_tlb() = 0;
  // True if any valid PTE remains in [first_key, first_key + pages).
  virtual bool npa_any_mapped(std::uint64_t first_key, std::uint64_t pages) const = 0;

  // A process's GPUVM page table.
  // Pages [va_page, va_page + pages) as `proto` with frames `frames` (empty: counting up from
  // proto.frame) and the largest fragments that hold, up to proto.fragment (the driver's
  // vm_fragment_size), replacing what was there.
  virtual void gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages,
                         const Pte& proto, std::span<const std::uint64_t> frames) = 0;
  // Unmaps [va_page, va_page + pages).
  virtual void gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page, std::uint64_t pages) = 0;
  // Invalidates `vmid`'s cached translations of [first, first + pages) (0 pages: all of
  // them); what it costs.
  virtual Time gpuvm_flush_tlb(std::uint16_t vmid, std::uint64_t first, std::uint64_t pages,
                               FlushKind kind) = 0;

  // Writes a command into `dst`'s ring and polls the write-back page until `dst`'s firmware
  // has consumed it: Ok, NoSpc (ring full), Time (not consumed in time), Comm (firmware
  // error). A TLB-ring command makes `dst`'s firmware flush its GPUVM TLBs.
  virtual Task<Errno> send(AccelId dst, Ring ring, Dwords command) = 0;

  // The invariant checker: `importer` gave up export `tag` (release received, or the
  // connection was reset); from now on no access of its may be served from it.
  // -- activation's hardware (reference §1, §8); a world without it leaves them as they are
  // Incoming NPA translation on or off (the PSP's command): off, every incoming access and
  // ring write is refused.
  virtual void npa_enable(bool on) { (void)on; }
  // The rings' receive pages mapped in the NPA VM (how many PTEs were written), or unmapped.
  virtual std::uint64_t rings_map(bool up) {
    (void)up;
    return 0;
  }
  // The firmware loads the rings' metadata and reports READY some time later; halted, it
  // takes no command.
  virtual void firmware_load() {}
  virtual bool firmware_ready() const { return true; }
  virtual void firmware_halt() {}

  // For the invariant checker: `importer` no longer holds export `tag` (its accesses to it are
  // violations from now on), or holds it again (granted anew: a re-import after a reset).
  virtual void note_released(std::uint64_t tag, AccelId importer) = 0;
  virtual void note_granted(std::uint64_t tag, AccelId importer) { (void)tag, (void)importer; }
  virtual void note_violation(const std::string& what) = 0;

  // For the timeline (optional): a user call that ran from `start` until now, and a message
  // this driver has just handled.
  virtual void note_call(std::string_view what, Time start, const std::string& detail) {
    (void)what, (void)start, (void)detail;
  }
  virtual void note_message(std::string_view what, AccelId from) { (void)what, (void)from; }
};

}  // namespace podsim::driver
