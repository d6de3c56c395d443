// What fresh memory costs the host: maps MIB MiB of anonymous memory (asking for transparent
// huge pages unless HUGE is 0), writes one byte in every 4 KiB page (each first write faults a
// page in, which the kernel zeroes), then writes them all again, then unmaps them, maps as
// much again and writes it (fresh to the process, but memory the kernel has just had back).
// Prints host seconds and milliseconds per MiB for each pass. A simulation that grows its
// memory pays the first pass's price per MiB it allocates and touches (docs/speed.md, "Fresh
// memory").
//
//   build/release/bench/bench_first_touch [MIB [HUGE]]   (default 512, 1)
#include <sys/mman.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::atol(argv[1]) : 512;
  const long huge = argc > 2 ? std::atol(argv[2]) : 1;
  if (mib <= 0 || mib > (1L << 20) || (huge != 0 && huge != 1)) {
    std::fprintf(stderr, "usage: bench_first_touch [MIB>0 [HUGE: 0 or 1]]\n");
    return 2;
  }
  const auto bytes = static_cast<std::size_t>(mib) << 20;
  auto map = [&] {
    void* m = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
      std::perror("mmap");
      std::exit(1);
    }
    if (huge) ::madvise(m, bytes, MADV_HUGEPAGE);
    return static_cast<char*>(m);
  };
  using Clock = std::chrono::steady_clock;
  auto touch = [&](volatile char* p, char v) {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < bytes; i += 4096)
      p[i] = v;
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  char* p = map();
  const double first = touch(p, 1);
  const double again = touch(p, 2);
  ::munmap(p, bytes);
  p = map();
  const double remapped = touch(p, 3);
  ::munmap(p, bytes);
  std::printf(
      "%ld MiB, huge pages %s: first touch %.3f s (%.2f ms per MiB); again %.3f s (%.3f ms per "
      "MiB); unmapped, mapped and touched again %.3f s (%.3f ms per MiB)\n",
      mib, huge ? "asked" : "not asked", first, first * 1e3 / mib, again, again * 1e3 / mib,
      remapped, remapped * 1e3 / mib);
  return 0;
}
