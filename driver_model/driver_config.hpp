#pragma once

#include <array>
#include <string>
#include <vector>

#include "sim/core/params.hpp"
#include "sim/core/units.hpp"

namespace podsim::driver {

// Exported memory: pinned (the final design) or left movable (the v1 draft: the exporter may
// migrate pages, shooting down importers' TLBs, and importers retry accesses to absent pages).
enum class ExportedMemory : std::uint8_t { Pinned, Unpinned };
inline constexpr std::array<EnumName<ExportedMemory>, 2> kExportedMemoryNames{{
    {"pinned", ExportedMemory::Pinned, "exported buffers are pinned in VRAM (final design)"},
    {"unpinned", ExportedMemory::Unpinned,
     "exported pages may be migrated, with remote shootdowns and importer retries (v1 draft)"},
}};

// The v1 draft's page migration (only with exported_memory = "unpinned").
struct MigrationConfig {
  Time eviction_interval = Time::us(20);
  Time copy_latency = Time::us(1);

  template <class V>
  void visit(V& v) {
    v.field("eviction_interval", eviction_interval,
            "mean time between evictions of an exported page (exponentially distributed)",
            at_least(Time::ns(100)));
    v.field("copy_latency", copy_latency, "time to copy one 4 KiB page to its new place");
  }
};

// The kernel driver's own costs and limits. Timeouts follow the amdgpu snapshot (§10).
struct DriverConfig {
  Time ioctl_latency = Time::us(2);
  Time alloc_latency = Time::ns(500);
  Time irq_handler_latency = Time::us(1);
  Time pte_update_latency = Time::ns(20);
  Time response_timeout = Time::ms(5000);
  Time release_timeout = Time::ms(5000);
  Time poll_interval_min = Time::us(10);
  Time poll_interval_max = Time::us(50);
  Time writeback_timeout = Time::ms(2000);
  std::uint32_t accel_max = 256;
  Bytes npa_window = Bytes(2ull << 40);
  ExportedMemory exported_memory = ExportedMemory::Pinned;
  MigrationConfig migration;
  // Apparent bugs of the snapshot (protocol reference, "Apparent bugs") to put back in; by
  // default podsim runs the protocol with them fixed. Known: B1, B3, B4, B5, B6, B7.
  std::vector<std::string> reintroduce_bugs;

  template <class V>
  void visit(V& v) {
    v.field("ioctl_latency", ioctl_latency, "time of one user API call (system call and ioctl)");
    v.field("alloc_latency", alloc_latency,
            "time between an import's lookup and its insert into the import table (a "
            "concurrent import of the same handle inside this window loses with EBUSY)");
    v.field("irq_handler_latency", irq_handler_latency,
            "driver time to take one protocol message from the interrupt ring and dispatch it");
    v.field("pte_update_latency", pte_update_latency,
            "CPU time to write one 4 KiB PTE (GPUVM or NPA VM)");
    v.field("response_timeout", response_timeout,
            "how long a driver waits for HELLO_ACK or NPA_RSP (snapshot: 5 s)",
            at_least(Time::ns(1)));
    v.field("release_timeout", release_timeout,
            "how long a revoke waits for importers' NPA_RELEASE (snapshot: 5 s)",
            at_least(Time::ns(1)));
    v.field("poll_interval_min", poll_interval_min,
            "shortest sleep between polls of the write-back page (snapshot: 10 us)",
            at_least(Time::ns(1)));
    v.field("poll_interval_max", poll_interval_max,
            "longest sleep between polls of the write-back page (snapshot: 50 us)",
            at_least(Time::ns(1)));
    v.field("writeback_timeout", writeback_timeout,
            "how long a sender polls for its command to be consumed (snapshot: 2 s) before ETIME",
            at_least(Time::ns(1)));
    v.field("accel_max", accel_max,
            "highest accelerator count the driver supports (snapshot ACCEL_MAX: 256; UALink "
            "allows 1024)",
            between<std::uint32_t>(1, 1024));
    v.field("npa_window", npa_window,
            "size of each NPA window ranges are allocated from (the architecture's: 2 TiB; the "
            "first 2 MiB are kept for rings)",
            between(Bytes::MiB(4), Bytes(2ull << 40)));
    v.choice("exported_memory", exported_memory, "whether exported memory is pinned",
             std::span<const EnumName<ExportedMemory>>(kExportedMemoryNames));
    v.section("migration", migration, "page migration of the unpinned design");
    v.field("reintroduce_bugs", reintroduce_bugs,
            "snapshot flaws to put back in for study (B1, B3, B4, B5, B6, B7); none by default");
  }
  template <class C>
  void check(C& c) const {
    if (npa_window.count() % (2ull << 20) != 0) c.fail("npa_window", "must be a multiple of 2 MiB");
    if (poll_interval_max < poll_interval_min)
      c.fail("poll_interval_max", "must not be below poll_interval_min");
    for (std::size_t i = 0; i < reintroduce_bugs.size(); ++i) {
      const std::string& b = reintroduce_bugs[i];
      if (b != "B1" && b != "B3" && b != "B4" && b != "B5" && b != "B6" && b != "B7")
        c.fail("reintroduce_bugs." + std::to_string(i),
               "\"" + b + "\" is not one of B1, B3, B4, B5, B6, B7");
    }
  }
  bool bug(const char* id) const {
    for (const auto& b : reintroduce_bugs)
      if (b == id) return true;
    return false;
  }
};

}  // namespace podsim::driver
