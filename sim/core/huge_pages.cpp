#include "sim/core/huge_pages.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/sanitizers.hpp"

#if defined(__linux__)
#include <gnu/libc-version.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 (glibc 2.36's headers predate it)
#endif
#endif

namespace podsim {

HugePageReport use_huge_pages() {
  HugePageReport r;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    // start-end perms offset dev inode [path]
    std::istringstream in(line);
    std::string range, perms, offset, dev, inode, path;
    in >> range >> perms >> offset >> dev >> inode;
    std::getline(in >> std::ws, path);
    if (perms.size() < 2 || perms[0] != 'r' || perms[1] != 'w') continue;
    if (!path.empty() && path != "[heap]") continue;  // files and stacks stay as they are
    const auto dash = range.find('-');
    const std::uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16);
    const std::uintptr_t hi = std::stoull(range.substr(dash + 1), nullptr, 16);
    const std::uintptr_t a = (lo + kHuge - 1) & ~(kHuge - 1), b = hi & ~(kHuge - 1);
    if (b <= a) continue;
    void* p = reinterpret_cast<void*>(a);
    if (::madvise(p, b - a, MADV_HUGEPAGE) != 0) continue;
    ++r.regions;
    r.bytes += b - a;
    ::madvise(p, b - a, MADV_COLLAPSE);  // what it can (it fails if any part cannot be)
  }
  std::ifstream rollup("/proc/self/smaps_rollup");
  while (std::getline(rollup, line))
    if (line.rfind("AnonHugePages:", 0) == 0) r.on_huge = std::stoull(line.substr(14)) * 1024;
#endif
  return r;
}

namespace {
bool enabled() {
  static const bool on = [] {
    const char* e = std::getenv("PODSIM_HUGE_PAGES");
    return !(e && std::string(e) == "0");
  }();
  return on;
}
}  // namespace

HugePageReport use_huge_pages_unless_disabled() {
  return enabled() ? use_huge_pages() : HugePageReport{};
}

namespace {
constexpr std::string_view kHugetlb = "glibc.malloc.hugetlb=";
bool g_restarted = false;
std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
std::string first_line(const char* path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}
}  // namespace

HeapFacts host_heap_facts() {
  HeapFacts f;
  f.huge_pages = env("PODSIM_HUGE_PAGES");
  if (const char* t = std::getenv("GLIBC_TUNABLES")) f.glibc_tunables = t;
  f.ld_preload = env("LD_PRELOAD");
  f.sanitized = PODSIM_ASAN;
#if defined(__linux__)
  f.thp_mode = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  try {
    f.thp_bytes = std::stoull(first_line("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"));
  } catch (const std::exception&) {
    f.thp_bytes = 0;
  }
  if (std::sscanf(gnu_get_libc_version(), "%u.%u", &f.glibc_major, &f.glibc_minor) != 2)
    f.glibc_major = f.glibc_minor = 0;
  f.by_loader = ::getauxval(AT_BASE) == 0;  // no interpreter loaded the program: it is ld.so
  {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("TracerPid:", 0) == 0) f.traced = std::stol(line.substr(10)) != 0;
  }
  f.thp_off = ::prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 1;
#endif
  return f;
}

std::optional<std::string> huge_heap_tunables(const HeapFacts& f) {
  const std::string tunables = f.glibc_tunables.value_or("");
  if (f.sanitized || f.huge_pages == "0" || tunables.find(kHugetlb) != std::string::npos ||
      !f.ld_preload.empty() || f.by_loader || f.traced || f.thp_off || f.thp_bytes != kHugePage ||
      f.glibc_major < 2 || (f.glibc_major == 2 && f.glibc_minor < 35))
    return std::nullopt;
  if (f.thp_mode.find("[madvise]") == std::string::npos && f.huge_pages != "1") return std::nullopt;
  const std::string tunable = std::string(kHugetlb) + "1";
  return tunables.empty() ? tunable : tunables + ":" + tunable;
}

std::optional<std::string> huge_heap_tunables() {
  return huge_heap_tunables(host_heap_facts());
}

void restart_with_huge_heap(char* argv[]) {
  if (std::getenv("PODSIM_RESTARTED")) {  // this is the restarted process: never twice
    g_restarted = true;
    ::unsetenv("PODSIM_RESTARTED");
    return;
  }
#if defined(__linux__)
  const std::optional<std::string> tunables = huge_heap_tunables();
  if (!tunables) return;
  const char* was = std::getenv("GLIBC_TUNABLES");
  const std::optional<std::string> old = was ? std::optional<std::string>(was) : std::nullopt;
  if (::setenv("GLIBC_TUNABLES", tunables->c_str(), 1) != 0) return;
  ::setenv("PODSIM_RESTARTED", "1", 1);
  ::execv("/proc/self/exe", argv);
  // Still here: run as started.
  if (old)
    ::setenv("GLIBC_TUNABLES", old->c_str(), 1);
  else
    ::unsetenv("GLIBC_TUNABLES");
  ::unsetenv("PODSIM_RESTARTED");
#else
  (void)argv;
#endif
}

bool restarted_for_huge_heap() {
  return g_restarted;
}

bool huge_heap_asked() {
  const std::string t = env("GLIBC_TUNABLES");
  const auto at = t.rfind(kHugetlb);
  return at != std::string::npos && t.compare(at + kHugetlb.size(), 1, "1") == 0 &&
         (at + kHugetlb.size() + 1 == t.size() || t[at + kHugetlb.size() + 1] == ':');
}

namespace {

void* map_huge(std::size_t bytes) {
  // Rounded up to whole huge pages, mapped with room to align, the excess given back.
  const std::size_t size = (bytes + kHugePage - 1) & ~(kHugePage - 1);
  void* m =
      ::mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto lo = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t a = (lo + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
  if (a > lo) ::munmap(m, a - lo);
  if (const std::uintptr_t end = lo + size + kHugePage; end > a + size)
    ::munmap(reinterpret_cast<void*>(a + size), end - (a + size));
  ::madvise(reinterpret_cast<void*>(a), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(a);
}

// Mid-size blocks (64 KiB to 1 MiB, powers of two) carved from shared 2 MiB huge pages, each
// size with its own free list: many small stores (one per GPU) share huge pages instead of
// each holding 4 KiB pages of its own. Huge pages once taken stay with the process.
class Arena {
 public:
  static constexpr std::size_t kMinShift = 16, kMaxShift = 20;
  static bool fits(std::size_t bytes) {
    return bytes >= (std::size_t{1} << kMinShift) && bytes <= (std::size_t{1} << kMaxShift);
  }
  void* take(std::size_t bytes) {
    const unsigned c = size_class(bytes);
    auto& free = free_[c - kMinShift];
    if (free.empty()) {
      char* page = static_cast<char*>(map_huge(kHugePage));
      const std::size_t size = std::size_t{1} << c;
      for (std::size_t off = kHugePage; off > 0; off -= size)
        free.push_back(page + off - size);
    }
    void* p = free.back();
    free.pop_back();
    return p;
  }
  void give(void* p, std::size_t bytes) { free_[size_class(bytes) - kMinShift].push_back(p); }

 private:
  static unsigned size_class(std::size_t bytes) {
    unsigned c = kMinShift;
    while ((std::size_t{1} << c) < bytes)
      ++c;
    return c;
  }
  std::vector<void*> free_[kMaxShift - kMinShift + 1];
};

Arena& arena() {
  static Arena* a = new Arena;  // never destroyed: blocks may be given back at exit
  return *a;
}

}  // namespace

namespace {
std::uint64_t g_huge_allocations = 0;
}  // namespace

std::uint64_t huge_allocations() {
  return g_huge_allocations;
}

void* huge_allocate(std::size_t bytes) {
  if (enabled() && (bytes >= kHugePage || Arena::fits(bytes))) {
    ++g_huge_allocations;
    if (bytes >= kHugePage) return map_huge(bytes);
    if (Arena::fits(bytes)) return arena().take(bytes);
  }
  return ::operator new(bytes);
}

void huge_deallocate(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (enabled()) {
    if (bytes >= kHugePage) {
      ::munmap(p, (bytes + kHugePage - 1) & ~(kHugePage - 1));
      return;
    }
    if (Arena::fits(bytes)) {
      arena().give(p, bytes);
      return;
    }
  }
  ::operator delete(p);
}

}  // namespace podsim
