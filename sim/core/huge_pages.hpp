// Host memory for speed: transparent huge pages (2 MiB) for the simulator's hot state, so the
// many modules' small structures, touched a few lines each per access, cost the host's TLB
// few misses. Linux only; elsewhere, or where the kernel refuses, nothing changes. Never
// changes a result: only where the process's pages live.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <optional>
#include <string>

namespace podsim {

struct HugePageReport {
  std::size_t regions = 0;  // heap and anonymous mappings asked to use huge pages
  std::size_t bytes = 0;    // their 2 MiB-aligned bytes
  std::size_t on_huge = 0;  // then, the process's memory on huge pages (AnonHugePages)
};

// Asks the kernel to back the heap (and large anonymous mappings: malloc's big blocks) with
// huge pages, and collapses what they hold already (a pod's state once it is built).
HugePageReport use_huge_pages();
// The same, unless the environment says PODSIM_HUGE_PAGES=0 (for comparing host speed).
HugePageReport use_huge_pages_unless_disabled();

// A run's heap on huge pages from its start: glibc's malloc puts its heap on transparent huge
// pages as it grows when GLIBC_TUNABLES says glibc.malloc.hugetlb=1 (glibc 2.35 and later, and
// only where the kernel gives huge pages to memory that asks: its "madvise" mode), so building
// and running a pod touches fresh memory 2 MiB at a time instead of 4 KiB. The tunable is read
// only as a process starts: `podsim run` starts itself again with it, and the commands that
// start runs as processes give it to them.
//
// What decides it: the process's environment and host (host_heap_facts), or a test's.
struct HeapFacts {
  std::string huge_pages;                     // PODSIM_HUGE_PAGES: "0" off, "1" even unasked
  std::optional<std::string> glibc_tunables;  // GLIBC_TUNABLES, if set
  std::string ld_preload;                     // LD_PRELOAD: valgrind, another allocator, a tool
  std::string thp_mode;                       // /sys/kernel/mm/transparent_hugepage/enabled
  std::uint64_t thp_bytes = 0;                // .../hpage_pmd_size: a huge page's bytes
  unsigned glibc_major = 0, glibc_minor = 0;
  bool by_loader = false;  // started as `ld.so podsim ...`: /proc/self/exe is the loader
  bool traced = false;     // a debugger or tracer is attached
  bool thp_off = false;    // prctl(PR_GET_THP_DISABLE): no huge pages for this process
  bool sanitized = false;  // AddressSanitizer's allocator, not glibc's
};
HeapFacts host_heap_facts();
// The GLIBC_TUNABLES to start with (glibc.malloc.hugetlb=1 added to what is set), or nothing
// where it would change nothing or cannot be done: PODSIM_HUGE_PAGES=0, the tunable already
// set (the user chose), anything preloaded, started by the loader, traced, huge pages turned
// off for the process or not 2 MiB, glibc older than 2.35, a sanitizer build, or the kernel not
// in its "madvise" mode (glibc uses the tunable only then; PODSIM_HUGE_PAGES=1 asks anyway,
// for tests and comparisons).
std::optional<std::string> huge_heap_tunables(const HeapFacts& facts);
std::optional<std::string> huge_heap_tunables();  // this process's (host_heap_facts)
// Starts this program again (exec: the same process, with huge_heap_tunables()), if that says
// to; a failed exec goes on as started. Call it first in main, before anything depends on the
// process's state. Never changes a result.
void restart_with_huge_heap(char* argv[]);
// This process was started again by restart_with_huge_heap.
bool restarted_for_huge_heap();
// GLIBC_TUNABLES asks glibc's malloc for huge pages (its last glibc.malloc.hugetlb setting is 1).
// What the kernel gave shows in the run's page faults.
bool huge_heap_asked();

// Blocks of at least 2 MiB on huge pages (mapped on their own, 2 MiB-aligned); smaller ones
// from the heap. For containers that grow large while a simulation runs.
void* huge_allocate(std::size_t bytes);
void huge_deallocate(void* p, std::size_t bytes) noexcept;
// Blocks huge_allocate has handed out without operator new (from its own mappings): with
// operator new's calls, the allocations the speed guard counts.
std::uint64_t huge_allocations();
inline constexpr std::size_t kHugePage = std::size_t{2} << 20;

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(huge_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { huge_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace podsim
