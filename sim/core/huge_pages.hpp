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

// The GLIBC_TUNABLES a podsim process should start with for glibc's malloc to put its heap on
// transparent huge pages as it grows (glibc.malloc.hugetlb=1 added to what is set), so that
// building and running a pod touches fresh memory 2 MiB at a time instead of 4 KiB; nothing
// where that would change nothing or cannot be done: PODSIM_HUGE_PAGES=0, the tunable already
// set (the user chose), the kernel giving huge pages unasked or never (not its "madvise"
// mode), glibc older than 2.35, under valgrind (its tools would lose the process) or
// AddressSanitizer (its own allocator). The tunable is read only as a process starts.
std::optional<std::string> huge_heap_tunables();
// Starts this program again (exec, the same process) with huge_heap_tunables(), if any; a
// failed exec goes on as started. Call it first in main, before anything depends on the
// process's state. Never changes a result.
void restart_with_huge_heap(char* argv[]);
// Whether this process's malloc puts its heap on huge pages (the tunable above is set).
bool heap_on_huge_pages();

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
