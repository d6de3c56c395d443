// What the driver model sees of the world: its own GPU (VRAM allocator, NPA VM, GPUVM), its
// firmware mailbox, and time. The SystemC shell implements it against the models; unit tests
// implement it with plain fakes. Every effect takes place at the driver's current time, which
// advances by what the driver spends.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "driver_model/messages.hpp"
#include "models/gpuvm/page_table.hpp"
#include "sim/base/units.hpp"

namespace podsim::driver {

class DriverEnv {
 public:
  virtual ~DriverEnv() = default;

  // The driver's current time: when its current operation started plus what it has spent.
  virtual Time now() const = 0;
  // CPU time the current operation takes (PTE writes, handler dispatch, ioctl entry...).
  virtual void spend(Time t) = 0;

  // VRAM pages (4 KiB page numbers), or nothing when VRAM is full.
  virtual std::optional<std::vector<std::uint64_t>> vram_alloc(std::uint64_t pages) = 0;
  virtual void vram_free(std::span<const std::uint64_t> pages) = 0;

  // This GPU's NPA VM: `key` as NpaMmu::key_of gives it.
  virtual void npa_map(std::uint64_t key, std::uint64_t vram_page) = 0;
  virtual void npa_unmap(std::uint64_t key) = 0;
  virtual void npa_flush_tlb() = 0;

  // A process's GPUVM page table.
  virtual void gpuvm_map(std::uint16_t vmid, std::uint64_t va_page, const Pte& pte) = 0;
  virtual void gpuvm_unmap(std::uint16_t vmid, std::uint64_t va_page) = 0;
  virtual void gpuvm_flush_tlb(std::uint16_t vmid) = 0;

  // Writes a message into `dst`'s interrupt ring. False when that ring is full.
  virtual bool send(AccelId dst, const Dwords& message) = 0;

  // Calls Driver::on_timer(token) `delay` after now().
  virtual void start_timer(std::uint64_t token, Time delay) = 0;
};

}  // namespace podsim::driver
