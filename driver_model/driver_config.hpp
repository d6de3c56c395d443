#pragma once

#include <array>
#include <bitset>
#include <optional>
#include <string>
#include <string_view>
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

// What an exporter does, once reset, about importers that were never told (they keep
// mappings into its NPA window, and in source aliasing a new export in the same range would
// serve them): the snapshot's nothing (they find out when the two next connect), or one of
// two what-if mitigations, both assuming the firmware keeps, across the reset, the NPA ranges
// it had handed out and whom it had granted them to.
enum class AfterReset : std::uint8_t { Lazy, Quarantine, Announce };
inline constexpr std::array<EnumName<AfterReset>, 3> kAfterResetNames{{
    {"lazy", AfterReset::Lazy,
     "nothing: a former importer finds out when the two next connect (the snapshot)"},
    {"quarantine", AfterReset::Quarantine,
     "the NPA ranges of before the reset are not handed out again until every former "
     "importer has connected again (and so dropped its stale imports)"},
    {"announce", AfterReset::Announce,
     "quarantine, and the driver connects to every former importer as soon as it is back, "
     "so they drop their stale imports at once"},
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
// The snapshot's apparent bugs (protocol reference, "Apparent bugs") that podsim can put back
// in for study. Of B2 only the rings' mapping by active-list position is (not the write-back
// pointer without a per-peer offset); of B8 only the unlocked export check is (the
// local-accelerator check has no local accelerators to act on).
enum class Bug : std::uint8_t { B1, B2, B3, B4, B5, B6, B7, B8, Count };
inline constexpr std::array<EnumName<Bug>, 8> kBugNames{{
    {"B1", Bug::B1, "HELLO sets PENDING before the reset that needs ESTABLISHED: no cleanup"},
    {"B2", Bug::B2,
     "source identification: the rings' receive pages are mapped by the sender's position in "
     "the vPod's active list (interrupt ring first), while senders write by accelerator ID "
     "(TLB ring first): harmless when the vPod's members are 0..n-1, lost messages otherwise"},
    {"B3", Bug::B3, "cleanup without importers leaks the dma-buf and its BO"},
    {"B4", Bug::B4,
     "pending bits set while sending: a RELEASE that empties the set before later importers "
     "are marked ends the wait at once (they are reset), and the wait lasts the full timeout "
     "when no NPA_REVOKE went out"},
    {"B5", Bug::B5,
     "a cached import skips the handle's hi half, an unsolicited NPA_RSP or NPA_FAIL "
     "overwrites the node's fields, and an NPA_REVOKE before the import is READY oopses (NULL "
     "dma-buf)"},
    {"B6", Bug::B6,
     "a repeated request pins again (alias mode; the revoke unpins once per importer), and "
     "stale-generation importers' ranges are freed with their PTEs still live"},
    {"B7", Bug::B7, "interrupt processing blocks in setup() for up to the response timeout"},
    {"B8", Bug::B8,
     "the export's already-exported check is unlocked: two concurrent exports of one buffer "
     "both make a handle, and the first is never revoked"},
}};
// The bit set is indexed by the enum: the list must hold every value, in its order.
static_assert(kBugNames.size() == static_cast<std::size_t>(Bug::Count));
static_assert([] {
  for (std::size_t i = 0; i < kBugNames.size(); ++i)
    if (static_cast<std::size_t>(kBugNames[i].value) != i) return false;
  return true;
}());
using Bugs = std::bitset<kBugNames.size()>;
inline std::optional<Bug> bug_named(std::string_view name) {
  for (const auto& b : kBugNames)
    if (b.name == name) return b.value;
  return std::nullopt;
}
// "B1, B3, ..." (for messages), or with what each does (for the config reference).
inline std::string bug_list(bool with_meanings = false) {
  std::string s;
  for (const auto& b : kBugNames) {
    s += (s.empty() ? "" : with_meanings ? "; " : ", ") + std::string(b.name);
    if (with_meanings) s += ": " + std::string(b.desc);
  }
  return s;
}

struct DriverConfig {
  Time ioctl_latency = Time::us(2);
  Time alloc_latency = Time::ns(500);
  Time export_alloc_latency = Time();
  Time irq_handler_latency = Time::us(1);
  Time pte_update_latency = Time::ns(20);
  Time wake_latency{};  // a woken driver thread's scheduling latency
  Time response_timeout = Time::ms(5000);
  Time release_timeout = Time::ms(5000);
  Time poll_interval_min = Time::us(10);
  Time poll_interval_max = Time::us(50);
  Time writeback_timeout = Time::ms(2000);
  Time psp_latency = Time::us(20);
  Time firmware_poll_interval = Time::ms(1);
  std::uint32_t firmware_poll_limit = 2000;
  std::uint32_t accel_max = 256;
  Bytes npa_window = Bytes(2ull << 40);
  Bytes max_fragment = Bytes::MiB(2);
  // max_fragment as a PTE's fragment field: log2 of the 4 KiB pages it covers.
  std::uint8_t max_fragment_log2() const {
    std::uint8_t f = 0;
    while ((4096ull << (f + 1)) <= max_fragment.count())
      ++f;
    return f;
  }
  ExportedMemory exported_memory = ExportedMemory::Pinned;
  AfterReset after_reset = AfterReset::Lazy;
  MigrationConfig migration;
  // Apparent bugs of the snapshot (protocol reference, "Apparent bugs") to put back in, by
  // name (kBugNames); by default podsim runs the protocol with them fixed.
  std::vector<std::string> reintroduce_bugs;

  template <class V>
  void visit(V& v) {
    v.field("ioctl_latency", ioctl_latency, "time of one user API call (system call and ioctl)");
    v.field("alloc_latency", alloc_latency,
            "time between an import's lookup and its insert into the import table (a "
            "concurrent import of the same handle inside this window loses with EBUSY)");
    v.field("export_alloc_latency", export_alloc_latency,
            "time to allocate a new export's node and dma-buf, between its already-exported "
            "check and its insert; the export may sleep there even at 0 (a concurrent export "
            "of the same buffer waits for the export lock and gets the same handle; with B8, "
            "unlocked, it can make a second one)");
    v.field("irq_handler_latency", irq_handler_latency,
            "driver time to take one protocol message from the interrupt ring and dispatch it");
    v.field("pte_update_latency", pte_update_latency,
            "CPU time to write one 4 KiB PTE (GPUVM or NPA VM)");
    v.field("wake_latency", wake_latency,
            "how long a driver thread woken from a wait (an import's answer, a handshake, a "
            "revoke's releases) takes to run: the host kernel's scheduling latency; messages "
            "the interrupt worker handles meanwhile come first (with B5 put back, an NPA_FAIL "
            "that overwrites a granted import's reason then fails it)",
            between(Time{}, Time::ms(1000)));
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
    v.field("psp_latency", psp_latency,
            "time of one PSP command in activation (enabling incoming NPA translation and "
            "programming the NPA VM; not from the snapshot: an assumption)");
    v.field("firmware_poll_interval", firmware_poll_interval,
            "activation's sleep between looks for the firmware's READY (snapshot: 1 ms)",
            at_least(Time::ns(1)));
    v.field("firmware_poll_limit", firmware_poll_limit,
            "looks for READY before activation gives up with ETIMEDOUT (snapshot: 2000)",
            between<std::uint32_t>(1, 1'000'000));
    v.field("accel_max", accel_max,
            "highest accelerator count the driver supports (snapshot ACCEL_MAX: 256; UALink "
            "allows 1024)",
            between<std::uint32_t>(1, 1024));
    v.field("npa_window", npa_window,
            "size of each NPA window ranges are allocated from (the architecture's: 2 TiB; "
            "ranges start at 8 MiB in source_aliasing mode, at 2 MiB in source_identification: "
            "what lies below is kept for rings)",
            between(Bytes::MiB(4), Bytes(2ull << 40)));
    v.field("max_fragment", max_fragment,
            "the largest fragment the driver writes into a PTE (GPUVM and NPA VM), where pages "
            "are contiguous and aligned: one TLB entry covers it (amdgpu's vm_fragment_size, 2 MiB "
            "on gfx9 and later: gmc_v9_0.c; 4KiB: no fragments, every page its own entry)",
            between(Bytes::KiB(4), Bytes::MiB(2)));
    v.choice("exported_memory", exported_memory, "whether exported memory is pinned",
             std::span<const EnumName<ExportedMemory>>(kExportedMemoryNames));
    v.choice("after_reset", after_reset,
             "what an exporter does, once reset or deactivated, about former importers never told "
             "of it",
             std::span<const EnumName<AfterReset>>(kAfterResetNames));
    v.section("migration", migration, "page migration of the unpinned design");
    v.field("reintroduce_bugs", reintroduce_bugs,
            "snapshot flaws to put back in for study, none by default (" + bug_list(true) + ")");
  }
  template <class C>
  void check(C& c) const {
    if (npa_window.count() % (2ull << 20) != 0) c.fail("npa_window", "must be a multiple of 2 MiB");
    if ((max_fragment.count() & (max_fragment.count() - 1)) != 0)
      c.fail("max_fragment", "must be a power of two");
    if (poll_interval_max < poll_interval_min)
      c.fail("poll_interval_max", "must not be below poll_interval_min");
    for (std::size_t i = 0; i < reintroduce_bugs.size(); ++i)
      if (!bug_named(reintroduce_bugs[i]))
        c.fail("reintroduce_bugs." + std::to_string(i),
               "\"" + reintroduce_bugs[i] + "\" is not one of " + bug_list());
  }
  // The bugs put back in (names checked above; unknown ones are ignored here).
  Bugs bugs() const {
    Bugs b;
    for (const auto& name : reintroduce_bugs)
      if (const auto bug = bug_named(name)) b.set(static_cast<std::size_t>(*bug));
    return b;
  }
};

}  // namespace podsim::driver
